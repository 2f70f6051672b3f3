package capture

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// BenchmarkPacketDecode is the packet decode stage alone: one 1400 byte TCP
// segment per op, from its link-layer header to the TCP header, for the
// link types captures come in.
func BenchmarkPacketDecode(b *testing.B) {
	payload := strings.Repeat("k", 1400)
	ip4 := ipTCP(b, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: payload})
	ip6 := ipTCP(b, true, client6, server6, seg{fromA: true, seq: 1, flags: "PA", data: payload})
	for _, tc := range []struct {
		name string
		link layers.LinkType
		data []byte
		head bool // decodeHead: the TCP options left for reassembly
	}{
		{"ethernet-ipv4", layers.LinkTypeEthernet, ethernet()(ip4, false), false},
		{"ethernet-ipv4-head", layers.LinkTypeEthernet, ethernet()(ip4, false), true},
		{"ethernet-vlan-ipv6", layers.LinkTypeEthernet, ethernet(layers.EthernetTypeDot1Q)(ip6, true), false},
		{"null-ipv4", layers.LinkTypeNull, null(binary.LittleEndian)(ip4, false), false},
		{"sll2-ipv4", layers.LinkTypeLinuxSLL2, sll2(ip4, false), false},
		{"raw-ipv4", layers.LinkTypeRaw, ip4, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d := newDecoder()
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			decode := d.decode
			if tc.head {
				decode = d.decodeHead
			}
			for b.Loop() {
				if decode(tc.link, tc.data) != decodedTCP {
					b.Fatal("not decoded as TCP")
				}
			}
		})
	}
}

// TestHotPathNoAllocs: a packet whose bytes go to a connection's stream
// (decoded, reassembled in order, delivered) allocates nothing once the
// connection exists. decode's TestMidFrameNoAllocs proves the same for the
// Kafka side; BenchmarkAssemblerInOrder shows it with times.
func TestHotPathNoAllocs(t *testing.T) {
	const size = 1400
	pkt := ipTCP(t, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: strings.Repeat("k", size)})
	var got int64
	a := NewAssembler(func(netip.AddrPort, netip.AddrPort, time.Time) Stream {
		return &countStream{n: &got}
	}, AssemblerOptions{})
	seq := uint32(1)
	ts := t0
	add := func() {
		binary.BigEndian.PutUint32(pkt[24:], seq)
		seq += size
		ts = ts.Add(10 * time.Microsecond)
		a.Add(Packet{Data: pkt, CI: ci(ts, len(pkt)), LinkType: layers.LinkTypeRaw})
	}
	for range 100 { // the connection and its pools exist
		add()
	}
	if n := testing.AllocsPerRun(1000, add); n != 0 {
		t.Errorf("%.2f allocations per in-order packet, want 0", n)
	}
	if want := int64(size) * (100 + 1001); got != want {
		t.Errorf("delivered %d bytes, want %d", got, want)
	}
}

// countStream counts the bytes delivered to it.
type countStream struct{ n *int64 }

func (s *countStream) Data(_ bool, data []byte, _ time.Time) bool {
	*s.n += int64(len(data))
	return true
}
func (s *countStream) Gap(bool, int, time.Time) {}
func (s *countStream) Close(time.Time)          {}
