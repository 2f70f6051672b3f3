package live

import (
	"fmt"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// MaxPorts is how many ports Options.Ports may list: each port costs two
// instructions per IP version and link offset in the kernel filter, and a
// classic BPF conditional jump reaches at most 255 instructions.
const MaxPorts = 64

// Values the filter compares with.
const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	etherTypeVLAN  = 0x8100 // 802.1Q
	etherTypeQinQ  = 0x88a8 // 802.1ad
	ipProtoTCP     = 6
	packetOutgoing = 4 // PACKET_OUTGOING: sll_pkttype of what the host sends
)

// filterSpec says what the kernel filter of a socket must accept.
type filterSpec struct {
	// link is LinkTypeEthernet for a raw socket on an Ethernet or loopback
	// interface (frames from the MAC header on), LinkTypeRaw for a cooked
	// socket (packets from the IP header on, the protocol in skb->protocol).
	link layers.LinkType
	// ports to accept as source or destination; empty accepts all TCP.
	ports []uint16
	// snapLen is what an accepted packet returns: the kernel cuts the
	// packet to it.
	snapLen uint32
	// rejectOutgoing drops every packet the host sends: set on a loopback
	// interface, where each sent packet is seen again as received.
	rejectOutgoing bool
	// loopbacks are the loopback interfaces' indexes whose outgoing packets
	// are dropped on a socket bound to all interfaces, for the same reason.
	loopbacks []uint32
}

// filterProgram builds the classic BPF program for spec: IPv4 or IPv6, TCP,
// a source or destination port in spec.ports. On Ethernet it also accepts
// one or two VLAN tags left in the frame (the kernel usually strips a
// received tag into metadata before the filter runs, so the frame it
// filters carries none). IPv4 fragments after the first (no TCP header) and
// IPv6 packets whose TCP header follows extension headers are rejected.
func filterProgram(spec filterSpec) ([]bpf.Instruction, error) {
	if len(spec.ports) > MaxPorts {
		return nil, fmt.Errorf("live: %d ports for the kernel filter, at most %d", len(spec.ports), MaxPorts)
	}
	p := &program{}
	reject := p.newLabel()

	// Loopback: every packet passes the taps twice, once sent and once
	// received; keep the received copy only, as libpcap does.
	switch {
	case spec.rejectOutgoing:
		p.add(bpf.LoadExtension{Num: bpf.ExtType})
		p.farIfEqual(packetOutgoing, reject)
	case len(spec.loopbacks) > 0:
		body, lo := p.newLabel(), p.newLabel()
		p.add(bpf.LoadExtension{Num: bpf.ExtType})
		p.jumpIf(bpf.JumpEqual, packetOutgoing, next, body)
		p.add(bpf.LoadExtension{Num: bpf.ExtInterfaceIndex})
		for _, idx := range spec.loopbacks {
			p.jumpIf(bpf.JumpEqual, idx, lo, next)
		}
		p.jump(body)
		p.place(lo)
		p.jump(reject)
		p.place(body)
	}

	var blocks []ipBlock
	block := func(v6 bool, off uint32) label {
		b := ipBlock{at: p.newLabel(), v6: v6, off: off}
		blocks = append(blocks, b)
		return b.at
	}
	switch spec.link {
	case layers.LinkTypeEthernet:
		// EtherType at 12, or after one or two VLAN tags at 16 or 20.
		etOffs := []uint32{12, 16, 20}
		for i, etOff := range etOffs {
			p.add(bpf.LoadAbsolute{Off: etOff, Size: 2})
			p.farIfEqual(etherTypeIPv4, block(false, etOff+2))
			p.farIfEqual(etherTypeIPv6, block(true, etOff+2))
			if i == len(etOffs)-1 {
				p.jump(reject)
				break
			}
			tagged := p.newLabel()
			p.jumpIf(bpf.JumpEqual, etherTypeVLAN, tagged, next)
			p.jumpIf(bpf.JumpEqual, etherTypeQinQ, tagged, next)
			p.jump(reject)
			p.place(tagged)
		}
	case layers.LinkTypeRaw:
		p.add(bpf.LoadExtension{Num: bpf.ExtProto})
		p.farIfEqual(etherTypeIPv4, block(false, 0))
		p.farIfEqual(etherTypeIPv6, block(true, 0))
		p.jump(reject)
	default:
		return nil, fmt.Errorf("live: no kernel filter for link type %v", spec.link)
	}
	for _, b := range blocks {
		p.ipBlock(b, spec.ports, spec.snapLen)
	}
	p.place(reject)
	p.add(bpf.RetConstant{Val: 0})
	return p.resolve()
}

// ipBlock is the part of the program that checks an IP packet at offset off.
type ipBlock struct {
	at  label
	v6  bool
	off uint32
}

// ipBlock emits the checks of one IP header and the TCP ports after it. All
// its jumps stay inside it, so they are short whatever the program's size.
func (p *program) ipBlock(b ipBlock, ports []uint16, snapLen uint32) {
	p.place(b.at)
	accept, reject := p.newLabel(), p.newLabel()
	var loadPort func(field uint32) bpf.Instruction
	if b.v6 {
		p.add(bpf.LoadAbsolute{Off: b.off + 6, Size: 1}) // next header
		p.jumpIf(bpf.JumpEqual, ipProtoTCP, next, reject)
		loadPort = func(field uint32) bpf.Instruction {
			return bpf.LoadAbsolute{Off: b.off + 40 + field, Size: 2}
		}
	} else {
		p.add(bpf.LoadAbsolute{Off: b.off + 9, Size: 1}) // protocol
		p.jumpIf(bpf.JumpEqual, ipProtoTCP, next, reject)
		p.add(bpf.LoadAbsolute{Off: b.off + 6, Size: 2}) // flags, fragment offset
		p.jumpIf(bpf.JumpBitsSet, 0x1fff, reject, next)
		p.add(bpf.LoadMemShift{Off: b.off}) // X = IHL*4
		loadPort = func(field uint32) bpf.Instruction {
			return bpf.LoadIndirect{Off: b.off + field, Size: 2}
		}
	}
	if len(ports) == 0 {
		p.add(bpf.RetConstant{Val: snapLen})
		p.place(reject)
		p.add(bpf.RetConstant{Val: 0})
		return
	}
	for _, field := range []uint32{0, 2} { // source port, destination port
		p.add(loadPort(field))
		for _, port := range ports {
			p.jumpIf(bpf.JumpEqual, uint32(port), accept, next)
		}
	}
	p.place(reject)
	p.add(bpf.RetConstant{Val: 0})
	p.place(accept)
	p.add(bpf.RetConstant{Val: snapLen})
}

// label names an instruction of a program before it is placed.
type label int

// next is the label of the instruction that follows a jump.
const next label = -1

// program assembles instructions whose jumps name labels, resolved into
// skip counts once everything is placed.
type program struct {
	ins  []bpf.Instruction
	at   []int // label -> index of the instruction it names; -1 until placed
	refs []jumpRef
}

// jumpRef is a jump waiting for its labels to be placed.
type jumpRef struct {
	ins    int
	uncond bool
	cond   bpf.JumpTest
	val    uint32
	t, f   label
}

func (p *program) newLabel() label {
	p.at = append(p.at, -1)
	return label(len(p.at) - 1)
}

func (p *program) place(l label) { p.at[l] = len(p.ins) }

func (p *program) add(i bpf.Instruction) { p.ins = append(p.ins, i) }

// jump jumps to l, however far.
func (p *program) jump(l label) {
	p.refs = append(p.refs, jumpRef{ins: len(p.ins), uncond: true, t: l})
	p.add(bpf.Jump{})
}

// jumpIf jumps to t if A cond val holds, else to f: both at most 255
// instructions ahead.
func (p *program) jumpIf(cond bpf.JumpTest, val uint32, t, f label) {
	p.refs = append(p.refs, jumpRef{ins: len(p.ins), cond: cond, val: val, t: t, f: f})
	p.add(bpf.JumpIf{})
}

// farIfEqual jumps to l, however far, if A == val.
func (p *program) farIfEqual(val uint32, l label) {
	p.add(bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: val, SkipTrue: 1})
	p.jump(l)
}

// resolve turns labels into skip counts.
func (p *program) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, l label) (int, error) {
		if l == next {
			return 0, nil
		}
		to := p.at[l]
		if to <= from {
			return 0, fmt.Errorf("live: filter label %d not placed after instruction %d", l, from)
		}
		return to - from - 1, nil
	}
	for _, r := range p.refs {
		t, err := skip(r.ins, r.t)
		if err != nil {
			return nil, err
		}
		if r.uncond {
			p.ins[r.ins] = bpf.Jump{Skip: uint32(t)}
			continue
		}
		f, err := skip(r.ins, r.f)
		if err != nil {
			return nil, err
		}
		if t > 255 || f > 255 {
			return nil, fmt.Errorf("live: filter jump at instruction %d too far (%d, %d)", r.ins, t, f)
		}
		p.ins[r.ins] = bpf.JumpIf{Cond: r.cond, Val: r.val, SkipTrue: uint8(t), SkipFalse: uint8(f)}
	}
	return p.ins, nil
}
