package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// readBack reads every packet of a capture file's bytes.
func readBack(t *testing.T, name string, b []byte) []Packet {
	t.Helper()
	src, err := NewSource(name, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []Packet
	for {
		p, err := src.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		p.Data = bytes.Clone(p.Data)
		out = append(out, p)
	}
}

// TestSpanWriter selects the IPv4 connection of the real loopback captures,
// within a time span, from an Ethernet and an SLL2 capture: one link type
// gives a pcap, two a pcapng with both; what is written reads back as the
// packets selected, bytes and times unchanged.
func TestSpanWriter(t *testing.T) {
	var all []Packet
	for _, name := range []string{"testdata/lo-ethernet.pcap", "testdata/any-sll2.pcap"} {
		src, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			p, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			p.Data = bytes.Clone(p.Data)
			all = append(all, p)
		}
		src.Close()
	}
	// The IPv4 connection: the first TCP packet's ends.
	dec := newDecoder()
	var a, b netip.AddrPort
	for _, p := range all {
		if dec.decode(p.LinkType, p.Data) == decodedTCP && dec.src.Addr().Is4() {
			a, b = dec.src, dec.dst
			break
		}
	}
	if !a.IsValid() {
		t.Fatal("no IPv4 TCP packet in the test captures")
	}
	first := all[0].CI.Timestamp
	span := ConnSpan{A: b, B: a, From: first, To: first.Add(time.Hour)} // either order of the ends
	var want []Packet
	for _, p := range all {
		if dec.decode(p.LinkType, p.Data) == decodedTCP && keyOf(dec.src, dec.dst) == keyOf(a, b) {
			want = append(want, p)
		}
	}
	for _, tc := range []struct {
		name  string
		links []layers.LinkType
		magic uint32
	}{
		{"one link type: pcap", []layers.LinkType{layers.LinkTypeEthernet}, magicPcapNanoLE},
		{"two link types: pcapng", []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2}, magicPcapng},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w, err := NewSpanWriter(&out, []ConnSpan{span}, tc.links)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range all {
				if _, err := w.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if m := binary.LittleEndian.Uint32(out.Bytes()); m != tc.magic {
				t.Fatalf("magic %#x, want %#x", m, tc.magic)
			}
			exp := want
			if len(tc.links) == 1 {
				exp = nil // the SLL2 packets have no interface in a pcap of Ethernet
				for _, p := range want {
					if p.LinkType == layers.LinkTypeEthernet {
						exp = append(exp, p)
					}
				}
			}
			got := readBack(t, tc.name, out.Bytes())
			if len(got) != w.Packets() || len(got) != len(exp) || len(exp) == 0 {
				t.Fatalf("read back %d packets, wrote %d, want %d", len(got), w.Packets(), len(exp))
			}
			for i := range got {
				if !bytes.Equal(got[i].Data, exp[i].Data) || !got[i].CI.Timestamp.Equal(exp[i].CI.Timestamp) || got[i].LinkType != exp[i].LinkType {
					t.Fatalf("packet %d differs", i)
				}
			}
		})
	}
}
