package capture

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"slices"
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
	out, err := readAll(src)
	if err != nil {
		t.Fatal(err)
	}
	return out
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
		ps, err := readAll(src)
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ps...)
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
	var conn []Packet
	for _, p := range all {
		if dec.decode(p.LinkType, p.Data) == decodedTCP && keyOf(dec.src, dec.dst) == keyOf(a, b) {
			conn = append(conn, p)
		}
	}
	if len(conn) < 6 {
		t.Fatalf("%d packets of the connection, want 6 or more", len(conn))
	}
	// A window inside the connection's time: from its 3rd packet's time to
	// its 3rd last's, both ends included; the packets expected are those of
	// the connection captured within it.
	times := make([]time.Time, len(conn))
	for i, p := range conn {
		times[i] = p.CI.Timestamp
	}
	slices.SortFunc(times, time.Time.Compare)
	from, to := times[2], times[len(times)-3]
	span := ConnSpan{A: b, B: a, From: from, To: to} // either order of the ends
	var want []Packet
	for _, p := range conn {
		if ts := p.CI.Timestamp; !ts.Before(from) && !ts.After(to) {
			want = append(want, p)
		}
	}
	if len(want) == len(conn) {
		t.Fatal("the window excludes no packet: it tests nothing")
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
			w, err := NewSpanWriter(&out, []ConnSpan{span}, tc.links, nil)
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
