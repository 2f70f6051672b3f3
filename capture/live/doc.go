// Package live is the packet source of kdupcap live: it reads packets from
// a network interface, where capture.Source reads them from a file.
//
//	live -> capture (Assembler) -> decode -> detect -> report
//
// It takes an interface name and the Kafka ports, and gives
// [capture.Packet] values, the same type the file sources give, so that
// live and file input share one path from packets to findings. It imports
// capture for that type only and must never import decode, detect, profile,
// report, pipeline or anything that knows Kafka; pipeline wires it to the
// Assembler.
//
// # Capture
//
// [Open] opens a Linux AF_PACKET socket with a TPACKET_V3 ring shared with
// the kernel (gopacket's afpacket: no cgo, so the binary stays static),
// and attaches a classic BPF program, assembled here with golang.org/x/net/bpf,
// that keeps IPv4 and IPv6 TCP packets whose source or destination port is
// one of [Options].Ports, so that the host's other traffic never reaches
// user space. The frames returned depend on the interface:
//
//   - An Ethernet or loopback interface is read with a raw socket: frames
//     from the Ethernet header on, [layers.LinkTypeEthernet]. The kernel
//     usually strips a VLAN tag into metadata before the filter runs; the
//     tag is not put back (the filter also accepts frames that still carry
//     one or two tags).
//   - "any" (every interface) and interfaces without an Ethernet header
//     (tunnels) are read with a cooked socket: packets from the IP header
//     on, [layers.LinkTypeRaw].
//
// On a loopback interface every packet passes twice, once sent and once
// received: the filter keeps only the received copy, on "lo" and on "any"
// alike, as libpcap does. IPv4 fragments after the first and IPv6 packets
// whose TCP header follows extension headers are not kept. Packets that
// reached the ring in the instant between opening the socket and attaching
// the filter are discarded by [Source.Next] and counted.
//
// # Waiting, stopping, counting
//
// [Source.Next] waits at most [Options].PollTimeout and then returns
// [ErrTimeout], so that the caller can do periodic work (status lines,
// flushing by time) and see that it must stop. [Source.Stats] reads the
// kernel's counters of packets, drops (ring full) and queue freezes; they
// are cumulative and never reset, so that a drop is never silent.
//
// # Privileges
//
// Opening a packet socket needs root or CAP_NET_RAW; without it Open
// returns a [*PermissionError] whose one-line message says so. After Open,
// [DropPrivileges] makes the process run as an ordinary user, as tcpdump -Z
// does; the socket keeps working.
//
// # Ownership
//
// The Data of a packet from Next lies in the ring: it belongs to the
// Source and is valid only until the next call to Next or Close; the
// Assembler does not keep it. Next and Close are for one goroutine at a
// time (Close waits for a Next in progress); Stats may be called from any
// goroutine.
//
// # Bad input
//
// Whatever the network carries is handed on as it is (cut at the snap
// length): deciding what a frame holds is capture's Assembler's job, and a
// frame it cannot decode is counted there, never an error here. Errors are
// about the socket only: bad options, an unknown interface, no privilege,
// a failed poll (the interface went away). On other systems than Linux,
// Open and DropPrivileges fail with [ErrUnsupported]. Nothing in this
// package panics on bad input.
package live
