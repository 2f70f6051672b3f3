// Package live is the packet source of kdupcap live: it reads packets from a
// network interface, where capture.Source reads them from a file.
//
//	live -> capture (Assembler) -> decode -> detect -> profile -> report
//
// It takes an interface name and the Kafka ports, and gives [capture.Packet]
// values, the same type the file sources give, so that live and file input
// share one path from packets to findings. It imports capture for that type
// only and must never import decode, detect, profile, report, pipeline or
// anything that knows Kafka; pipeline wires it to the Assembler.
//
// # Capture
//
// [Open] opens a Linux AF_PACKET socket with a TPACKET_V3 ring shared with
// the kernel (gopacket's afpacket: no cgo, so the binary stays static) and
// attaches a classic BPF program that keeps IPv4 and IPv6 TCP packets with a
// port of [Options].Ports, so that the host's other traffic never reaches
// user space. An Ethernet or loopback interface gives Ethernet frames (a VLAN
// tag the kernel stripped is not put back); "any" and interfaces without an
// Ethernet header give raw IP packets. On loopback only the received copy of
// a packet is kept, as libpcap does. [Source.Next] waits at most
// [Options].PollTimeout, then returns [ErrTimeout] so that the caller can do
// periodic work. [Source.Stats] reads the kernel's counters of packets, drops
// and queue freezes, cumulative so that a drop is never silent. Open needs
// root or CAP_NET_RAW, else it returns a [*PermissionError]; [DropPrivileges]
// then runs the process as an ordinary user, as tcpdump -Z does.
//
// # Ownership
//
// The Data of a packet from Next lies in the ring: it belongs to the Source
// and is valid only until the next call to Next or Close; the Assembler does
// not keep it. Next and Close are for one goroutine at a time (Close waits
// for a Next in progress); Stats may be called from any goroutine.
//
// # Bad input and bounds
//
// Whatever the network carries is handed on as it is, cut at
// [Options].SnapLen: a frame capture's Assembler cannot decode is counted
// there, never an error here. IPv4 fragments after the first, IPv6 packets
// with extension headers before TCP, and packets that reached the ring before
// the filter was attached (counted) are not kept. The ring holds
// [Options].RingBytes; when it is full the kernel drops packets and counts
// them. Errors are about the socket only: bad options, an unknown interface,
// no privilege, a failed poll. On systems other than Linux, Open and
// DropPrivileges fail with [ErrUnsupported]. Nothing in this package panics
// on bad input.
//
// # Files
//
//   - live.go: Options, Stats, Source, Open, Next, DropPrivileges and the
//     errors.
//   - filter.go: the classic BPF program and the assembler of its jumps;
//     MaxPorts.
//   - live_linux.go: the AF_PACKET socket, its TPACKET_V3 ring, the privilege
//     drop.
//   - live_others.go: Open and DropPrivileges failing with ErrUnsupported.
package live
