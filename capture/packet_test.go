package capture

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// decodeState is what decode leaves for the Assembler: the result and, for
// a TCP segment, the layers and fields it reads.
func decodeState(d *decoder, link layers.LinkType, data []byte) string {
	return segmentState(d, d.decode(link, data), len(data), true)
}

// headState is what decodeHead leaves for the Assembler's fast path: all
// of decodeState but the TCP options and TransportFlow, left to fullTCP.
func headState(d *decoder, link layers.LinkType, data []byte) string {
	return segmentState(d, d.decodeHead(link, data), len(data), false)
}

// segmentState formats what a decode that gave r left in d, of a frame of
// n bytes; whole, with the TCP options and TransportFlow.
func segmentState(d *decoder, r decodeResult, n int, whole bool) string {
	if r != decodedTCP {
		return fmt.Sprint(r)
	}
	t := &d.tcp
	s := fmt.Sprintf("%v %v %v %v %d | %d %d %d %d %v%v%v%v%v%v%v%v%v w%d c%d u%d o%d %x %x | %d",
		r, d.src, d.dst, d.netFlow, d.missing,
		t.SrcPort, t.DstPort, t.Seq, t.Ack, t.FIN, t.SYN, t.RST, t.PSH, t.ACK, t.URG, t.ECE, t.CWR, t.NS,
		t.Window, t.Checksum, t.Urgent, t.DataOffset, t.Contents, t.Payload, n)
	if whole {
		s += fmt.Sprintf(" | %v %v %v", t.TransportFlow(), t.Options, t.Padding)
	}
	return s
}

// diffDecode reports how decode with decodeIPv4TCP and decodeEthernet and
// decode with the parsers alone differ on a frame, and how decodeHead
// differs from decode where the fast path reads.
func diffDecode(link layers.LinkType, data []byte) string {
	fast, slow := newDecoder(), newDecoder()
	slow.parsersOnly = true
	if h, s := headState(fast, link, data), headState(slow, link, data); h != s {
		return fmt.Sprintf("decodeHead gives\n%s\nthe parser\n%s", h, s)
	}
	f, s := decodeState(fast, link, data), decodeState(slow, link, data)
	if f != s {
		return fmt.Sprintf("decodeIPv4TCP and decodeEthernet give\n%s\nthe parser\n%s", f, s)
	}
	if !reflect.DeepEqual(fast.eth, slow.eth) && f != fmt.Sprint(decodedBad) {
		return fmt.Sprintf("Ethernet layer %+v, parser %+v", fast.eth, slow.eth)
	}
	if !reflect.DeepEqual(fast.ip4, slow.ip4) && f != fmt.Sprint(decodedBad) {
		return fmt.Sprintf("IPv4 layer %+v, parser %+v", fast.ip4, slow.ip4)
	}
	return ""
}

// ethernetFrames are Ethernet frames of the seed captures and generated
// ones of every kind decodeEthernet meets: IPv4 and IPv6, VLAN tags,
// options, cut by a snap length, fragments.
func ethernetFrames(tb testing.TB) [][]byte {
	var out [][]byte
	paths, _ := filepath.Glob("../testdata/*.pcap")
	more, _ := filepath.Glob("testdata/*.pcap")
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		s, err := NewSource(p, bytes.NewReader(b))
		if err != nil {
			tb.Fatal(err)
		}
		pkts, _ := readAll(s)
		for i, p := range pkts {
			if p.LinkType == layers.LinkTypeEthernet && i < 200 {
				out = append(out, p.Data)
			}
		}
	}
	// TCP options of every shape decodeIPv4TCP leaves to fullTCP: Linux's,
	// a SYN's, MPTCP ones gopacket decodes, stops at or drops, an end of
	// list with padding, a length past the option area.
	plain := ipTCP(tb, false, client4, server4, seg{fromA: true, seq: 7, flags: "PA", data: "request bytes"})
	for _, opt := range []string{
		"0101080a0000000100000002",
		"020405b40402080a00000001000000000103030700",
		"1e0420000000",
		"1e020000",
		"1e0c0081010203040506070800000000",
		"1e080000",
		"00000000",
		"fe100000",
		"0101",
	} {
		b, err := hex.DecodeString(opt)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ethernet()(withTCPOptions(plain, b), false))
	}
	for _, fr := range frames {
		if fr.link != layers.LinkTypeEthernet {
			continue
		}
		client, server := client4, server4
		if fr.v6 {
			client, server = client6, server6
		}
		for _, sg := range []seg{{fromA: true, seq: 1, flags: "S"}, {fromA: true, seq: 7, flags: "PA", data: "request bytes"}, {fromA: false, seq: 9, flags: "FA"}, {fromA: true, seq: 3, flags: "R"}} {
			out = append(out, fr.wrap(ipTCP(tb, fr.v6, client, server, sg), fr.v6))
		}
	}
	return out
}

// withTCPOptions puts opts (padded to 4 bytes) after the TCP header of an
// IPv4 packet with no IP options, the lengths fixed.
func withTCPOptions(ip4 []byte, opts []byte) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 0)
	}
	out := slices.Concat(ip4[:40], opts, ip4[40:])
	out[32] = byte((20+len(opts))/4) << 4
	binary.BigEndian.PutUint16(out[2:], uint16(len(out)))
	return out
}

// TestDecodeEthernet: decodeIPv4TCP and decodeEthernet decode every frame
// as the parser does, whole, cut at every length, and with each header byte
// changed.
func TestDecodeEthernet(t *testing.T) {
	for i, fr := range ethernetFrames(t) {
		for n := 0; n <= len(fr); n++ {
			if n > 120 && n < len(fr)-2 {
				continue
			}
			if d := diffDecode(layers.LinkTypeEthernet, fr[:n]); d != "" {
				t.Fatalf("frame %d cut to %d bytes: %s", i, n, d)
			}
		}
		for at := 0; at < min(len(fr), 100); at++ {
			for _, v := range []byte{0, 1, 0x45, 0x46, 0x4f, 0x60, 0x06, 0x11, 0x20, 0x50, 0x80, 0x81, 0xff} {
				bad := bytes.Clone(fr)
				bad[at] = v
				if d := diffDecode(layers.LinkTypeEthernet, bad); d != "" {
					t.Fatalf("frame %d, byte %d = %#x: %s", i, at, v, d)
				}
			}
		}
	}
}

// FuzzDecodeEthernet: decodeIPv4TCP and decodeEthernet decode any frame as
// the parser does.
func FuzzDecodeEthernet(f *testing.F) {
	for _, fr := range ethernetFrames(f) {
		f.Add(fr)
	}
	f.Add(binary.BigEndian.AppendUint16(make([]byte, 12), uint16(layers.EthernetTypeIPv4)))
	f.Fuzz(func(t *testing.T, fr []byte) {
		if d := diffDecode(layers.LinkTypeEthernet, fr); d != "" {
			t.Fatal(d)
		}
	})
}
