package capture

import (
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// payloads decodes packets with gopacket.NewPacket, independently of the
// Assembler, and returns the payload each direction carried, segments
// deduplicated by sequence number and put in order (the captures have no
// holes, but a -i any capture can miss a whole direction).
func payloads(t *testing.T, pkts []Packet) map[dirKey]string {
	type part struct {
		seq  uint32
		data string
	}
	parts := map[dirKey]map[uint32]string{}
	for _, p := range pkts {
		gp := gopacket.NewPacket(p.Data, p.LinkType, gopacket.Default)
		tcp, _ := gp.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil || gp.NetworkLayer() == nil {
			t.Fatalf("no TCP in %v", gp)
		}
		src, _ := netip.AddrFromSlice(gp.NetworkLayer().NetworkFlow().Src().Raw())
		dst, _ := netip.AddrFromSlice(gp.NetworkLayer().NetworkFlow().Dst().Raw())
		k := dirKey{netip.AddrPortFrom(src, uint16(tcp.SrcPort)), netip.AddrPortFrom(dst, uint16(tcp.DstPort))}
		if parts[k] == nil {
			parts[k] = map[uint32]string{}
		}
		if len(tcp.Payload) > 0 {
			parts[k][tcp.Seq] = string(tcp.Payload)
		}
	}
	out := map[dirKey]string{}
	for k, m := range parts {
		var ps []part
		for seq, d := range m {
			ps = append(ps, part{seq, d})
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].seq < ps[j].seq })
		for _, p := range ps {
			out[k] += p.data
		}
	}
	return out
}

// TestRealCaptures reads the captures that testdata/gen.sh made with tcpdump
// of testdata/talk.py's traffic on loopback: per connection (IPv4 and IPv6)
// the client sends request and the server answers response, then both close.
func TestRealCaptures(t *testing.T) {
	request := strings.Repeat("request bytes ", 300)
	response := strings.Repeat("response bytes\n", 10)
	tests := []struct {
		file  string
		links []layers.LinkType
		conns int
	}{
		{"lo-ethernet.pcap", []layers.LinkType{layers.LinkTypeEthernet}, 2},
		{"any-sll2.pcap", []layers.LinkType{layers.LinkTypeLinuxSLL2}, 2},
		{"any-sll.pcap.gz", []layers.LinkType{layers.LinkTypeLinuxSLL}, 2},
		{"mixed-links.pcapng", []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s, err := Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			pkts, err := readAll(s)
			if err != nil {
				t.Fatal(err)
			}
			links := map[layers.LinkType]bool{}
			for _, p := range pkts {
				links[p.LinkType] = true
			}
			for _, l := range tt.links {
				if !links[l] {
					t.Errorf("no packet of link type %v (have %v)", l, links)
				}
			}
			if len(links) != len(tt.links) {
				t.Errorf("link types %v, want %v", links, tt.links)
			}
			r := &recorder{}
			a := NewAssembler(r.newStream, AssemblerOptions{})
			feed(t, a, pkts)
			a.Close()
			if len(r.streams) != tt.conns {
				t.Fatalf("%d streams, want %d:\n%s", len(r.streams), tt.conns, r.dump())
			}
			v6 := 0
			carried := payloads(t, pkts)
			for i, st := range r.streams {
				var want []string
				if d := carried[dirKey{st.a, st.b}]; d != "" {
					want = append(want, "A "+d)
				}
				if d := carried[dirKey{st.b, st.a}]; d != "" {
					want = append(want, "B "+d)
				}
				want = append(want, "close")
				if strings.Join(st.events, "|") != strings.Join(want, "|") {
					t.Errorf("stream %d %v>%v: %.200q", i, st.a, st.b, st.events)
				}
				// tcpdump -i lo misses nothing.
				if tt.file == "lo-ethernet.pcap" && (carried[dirKey{st.a, st.b}] != request || carried[dirKey{st.b, st.a}] != response) {
					t.Errorf("stream %d: the capture misses bytes", i)
				}
				if st.b.Port() != 29092 {
					t.Errorf("stream %d: a=%v b=%v, want the client first", i, st.a, st.b)
				}
				if st.a.Addr().Is6() {
					v6++
				}
			}
			if v6 != tt.conns/2 {
				t.Errorf("%d IPv6 connections of %d", v6, tt.conns)
			}
			if st := a.Stats(); st.Gaps != 0 || st.Undecodable != 0 || st.NonTCP != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}
