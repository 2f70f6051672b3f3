package capture

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	client4 = netip.MustParseAddrPort("10.0.0.1:40000")
	server4 = netip.MustParseAddrPort("10.0.0.2:9092")
	client6 = netip.MustParseAddrPort("[fd00::1]:40000")
	server6 = netip.MustParseAddrPort("[fd00::2]:9092")
	t0      = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
)

// seg is one scripted TCP segment. fromA is client to server.
type seg struct {
	fromA bool
	seq   uint32
	flags string // any of S A F R P
	data  string
	at    time.Duration // from t0; 0 means "1ms after the previous segment"
	cut   int           // bytes the snap length cuts from the end of the frame
	other bool          // from the client's other port (a second connection)
	ack   uint32        // acknowledgment number; 0 means 1
}

// frame is how a test packet is wrapped below IP.
type frame struct {
	name string
	link layers.LinkType
	v6   bool
	wrap func(ip []byte, v6 bool) []byte // nil: raw IP
}

func ethernet(tags ...layers.EthernetType) func([]byte, bool) []byte {
	return func(ip []byte, v6 bool) []byte {
		et := layers.EthernetTypeIPv4
		if v6 {
			et = layers.EthernetTypeIPv6
		}
		h := make([]byte, 0, 14+4*len(tags))
		h = append(h, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 6)
		for i, tpid := range tags {
			h = binary.BigEndian.AppendUint16(h, uint16(tpid))
			h = binary.BigEndian.AppendUint16(h, uint16(100+i)) // VLAN ID
		}
		h = binary.BigEndian.AppendUint16(h, uint16(et))
		return append(h, ip...)
	}
}

func ethertype(v6 bool) uint16 {
	if v6 {
		return uint16(layers.EthernetTypeIPv6)
	}
	return uint16(layers.EthernetTypeIPv4)
}

func sll(ip []byte, v6 bool) []byte {
	h := make([]byte, 16, 16+len(ip))
	binary.BigEndian.PutUint16(h[0:], 0)   // to us
	binary.BigEndian.PutUint16(h[2:], 772) // ARPHRD_LOOPBACK
	binary.BigEndian.PutUint16(h[4:], 6)
	binary.BigEndian.PutUint16(h[14:], ethertype(v6))
	return append(h, ip...)
}

func sll2(ip []byte, v6 bool) []byte {
	h := make([]byte, 20, 20+len(ip))
	binary.BigEndian.PutUint16(h[0:], ethertype(v6))
	binary.BigEndian.PutUint32(h[4:], 1)   // ifindex
	binary.BigEndian.PutUint16(h[8:], 772) // ARPHRD_LOOPBACK
	h[10], h[11] = 0, 6                    // packet type, address length
	return append(h, ip...)
}

func null(order binary.AppendByteOrder) func([]byte, bool) []byte {
	return func(ip []byte, v6 bool) []byte {
		fam := uint32(layers.ProtocolFamilyIPv4)
		if v6 {
			fam = uint32(layers.ProtocolFamilyIPv6Darwin)
		}
		return append(order.AppendUint32(nil, fam), ip...)
	}
}

var frames = []frame{
	{"raw4", layers.LinkTypeRaw, false, nil},
	{"raw6", layers.LinkTypeRaw, true, nil},
	{"ipv4", layers.LinkTypeIPv4, false, nil},
	{"ipv6", layers.LinkTypeIPv6, true, nil},
	{"ethernet4", layers.LinkTypeEthernet, false, ethernet()},
	{"ethernet6", layers.LinkTypeEthernet, true, ethernet()},
	{"vlan", layers.LinkTypeEthernet, false, ethernet(layers.EthernetTypeDot1Q)},
	{"qinq6", layers.LinkTypeEthernet, true, ethernet(layers.EthernetTypeQinQ, layers.EthernetTypeDot1Q)},
	{"sll", layers.LinkTypeLinuxSLL, false, sll},
	{"sll6", layers.LinkTypeLinuxSLL, true, sll},
	{"sll2", layers.LinkTypeLinuxSLL2, false, sll2},
	{"sll2v6", layers.LinkTypeLinuxSLL2, true, sll2},
	{"null", layers.LinkTypeNull, false, null(binary.LittleEndian)},
	{"null6", layers.LinkTypeNull, true, null(binary.LittleEndian)},
	{"loop", layers.LinkTypeLoop, false, null(binary.BigEndian)},
}

var rawFrame = frames[0]

// ipTCP serializes an IP packet holding one TCP segment.
func ipTCP(tb testing.TB, v6 bool, src, dst netip.AddrPort, s seg) []byte {
	tb.Helper()
	tcp := &layers.TCP{
		SrcPort: layers.TCPPort(src.Port()),
		DstPort: layers.TCPPort(dst.Port()),
		Seq:     s.seq,
		Ack:     max(s.ack, 1),
		Window:  65535,
		SYN:     strings.Contains(s.flags, "S"),
		ACK:     strings.Contains(s.flags, "A"),
		FIN:     strings.Contains(s.flags, "F"),
		RST:     strings.Contains(s.flags, "R"),
		PSH:     strings.Contains(s.flags, "P"),
	}
	var ip gopacket.SerializableLayer
	if v6 {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
			SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		tcp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	} else {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		tcp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ip, tcp, gopacket.Payload(s.data)); err != nil {
		tb.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// packets turns a script into packets of one connection between client and
// server, wrapped as f says.
func packets(tb testing.TB, f frame, client, server netip.AddrPort, script []seg) []Packet {
	tb.Helper()
	var out []Packet
	at := time.Duration(0)
	for _, s := range script {
		if s.at != 0 {
			at = s.at
		} else {
			at += time.Millisecond
		}
		src, dst := client, server
		if s.other {
			src = netip.AddrPortFrom(src.Addr(), src.Port()+1)
		}
		if !s.fromA {
			src, dst = server, client
		}
		data := ipTCP(tb, f.v6, src, dst, s)
		if f.wrap != nil {
			data = f.wrap(data, f.v6)
		}
		out = append(out, Packet{
			Data:     data[:len(data)-s.cut],
			CI:       gopacket.CaptureInfo{Timestamp: t0.Add(at), CaptureLength: len(data) - s.cut, Length: len(data)},
			LinkType: f.link,
		})
	}
	return out
}

// recorder records what an Assembler hands to its Streams.
type recorder struct {
	streams []*recStream
	refuse  func(a, b netip.AddrPort) bool // NewStreamFunc returns nil
	stopAt  int                            // Data returns false once a stream got this many bytes (0: never)
}

type recStream struct {
	r       *recorder
	a, b    netip.AddrPort
	events  []string
	bytes   [2]int
	closes  int
	stopped bool
	data    bool // the last event is data
}

func (r *recorder) newStream(a, b netip.AddrPort, _ time.Time) Stream {
	if r.refuse != nil && r.refuse(a, b) {
		return nil
	}
	s := &recStream{r: r, a: a, b: b}
	r.streams = append(r.streams, s)
	return s
}

func side(fromA bool) string {
	if fromA {
		return "A"
	}
	return "B"
}

func (s *recStream) add(ev string) {
	s.data = false
	if s.closes > 0 {
		ev = "after close: " + ev
	}
	s.events = append(s.events, ev)
}

func (s *recStream) Data(fromA bool, data []byte, _ time.Time) bool {
	if s.stopped {
		s.add("data after false")
	}
	i := 1
	if fromA {
		i = 0
	}
	s.bytes[i] += len(data)
	// Join with the previous event when it is data of the same direction:
	// how reassembly splits in-order bytes is not the test's business.
	if n := len(s.events); n > 0 && s.data && strings.HasPrefix(s.events[n-1], side(fromA)+" ") {
		s.events[n-1] += string(data)
	} else {
		s.add(side(fromA) + " " + string(data))
		s.data = true
	}
	if s.r.stopAt > 0 && s.bytes[0]+s.bytes[1] >= s.r.stopAt {
		s.stopped = true
		return false
	}
	return true
}

func (s *recStream) Gap(fromA bool, n int, _ time.Time) {
	s.add(fmt.Sprintf("%s gap %d", side(fromA), n))
}

func (s *recStream) Close(time.Time) {
	s.closes++
	s.data = false
	s.events = append(s.events, "close")
}

func (r *recorder) dump() string {
	var b strings.Builder
	for i, s := range r.streams {
		fmt.Fprintf(&b, "stream %d %s>%s: %q\n", i, s.a, s.b, s.events)
	}
	return b.String()
}

func ci(ts time.Time, n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: ts, CaptureLength: n, Length: n}
}
