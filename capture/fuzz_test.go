package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// seedFiles returns the seed captures and generated files of every format.
func seedFiles(tb testing.TB) [][]byte {
	paths, _ := filepath.Glob("../testdata/seed-*.pcap")
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	pkts := testPackets(tb)
	ng, _ := pcapngFile(tb, pkts)
	be := pcapFile(binary.BigEndian, true, layers.LinkTypeRaw, pkts)
	out = append(out, ng, be, gz(be), zst(tb, ng), nil, []byte("<html>"))
	return out
}

func FuzzSource(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		s, err := NewSource("fuzz", bytes.NewReader(file))
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.File != "fuzz" || ie.Error() == "" {
				t.Fatalf("NewSource error %v (%T)", err, err)
			}
			if s != nil {
				t.Fatal("source and error")
			}
			return
		}
		defer s.Close()
		plain := s.codec == ""
		var read int64
		for i := 0; ; i++ {
			p, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Fatalf("Next error %v (%T)", err, err)
				}
				if plain && ie.Offset > int64(len(file)) {
					t.Fatalf("error offset %d beyond the %d bytes of the file", ie.Offset, len(file))
				}
				if _, again := s.Next(); again != err {
					t.Fatalf("error not sticky: %v then %v", err, again)
				}
				break
			}
			if p.CI.CaptureLength != len(p.Data) || p.CI.AncillaryData != nil {
				t.Fatalf("packet %d: capture length %d, %d bytes", i, p.CI.CaptureLength, len(p.Data))
			}
			read += int64(len(p.Data))
			if plain && read > int64(len(file)) {
				t.Fatalf("read %d packet bytes from a %d byte file", read, len(file))
			}
		}
	})
}

// fuzzLinks are the link types FuzzPacket picks from.
var fuzzLinks = []layers.LinkType{
	layers.LinkTypeRaw, layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2,
	layers.LinkTypeNull, layers.LinkTypeLoop, layers.LinkTypeIPv4, layers.LinkTypeIPv6,
}

// packetRecords encodes packets for FuzzPacket: per packet one byte of time
// step (in 100ms), two bytes of length, the bytes.
func packetRecords(pkts [][]byte) []byte {
	var b []byte
	for _, p := range pkts {
		b = append(b, 3)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

func splitRecords(b []byte) (pkts [][]byte, steps []int) {
	for len(b) >= 3 {
		step, n := int(b[0]), int(binary.BigEndian.Uint16(b[1:]))
		b = b[3:]
		n = min(n, len(b))
		pkts = append(pkts, b[:n])
		steps = append(steps, step)
		b = b[n:]
	}
	return pkts, steps
}

type dirKey struct{ src, dst netip.AddrPort }

func FuzzPacket(f *testing.F) {
	for _, file := range seedFiles(f)[:2] {
		s, err := NewSource("seed", bytes.NewReader(file))
		if err != nil {
			continue
		}
		pkts, _ := readAll(s)
		var raw [][]byte
		for _, p := range pkts {
			raw = append(raw, p.Data)
		}
		f.Add(uint8(0), packetRecords(raw))
	}
	for i, fr := range frames {
		link := 0
		for j, l := range fuzzLinks {
			if l == fr.link {
				link = j
			}
		}
		client, server := client4, server4
		if fr.v6 {
			client, server = client6, server6
		}
		sc := script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "request"},
			{fromA: true, seq: 1001, flags: "PA", data: "request"},
			{fromA: true, seq: 1012, flags: "PA", data: "later"},
			{fromA: false, seq: 5001, flags: "PA", data: "response", cut: i % 3},
		}, finish(1017, 5009))
		var raw [][]byte
		for _, p := range packets(f, fr, client, server, sc) {
			raw = append(raw, p.Data)
		}
		f.Add(uint8(link), packetRecords(raw))
	}
	// Holes the peer acknowledges (filled at once), one of them cut by a
	// peer's RST, and a segment the snap length cut to nothing.
	for _, sc := range [][]seg{
		script(handshake, []seg{
			{fromA: true, seq: 1005, flags: "PA", data: "bbbb"},
			{fromA: true, seq: 1013, flags: "PA", data: "dddd"},
			{fromA: false, seq: 5001, flags: "PA", data: "x", ack: 1009},
			{fromA: true, seq: 1021, flags: "PA", data: "ffff"},
			{fromA: false, seq: 5002, flags: "PA", data: "y", ack: 1025},
			{fromA: false, seq: 5003, flags: "R"},
		}),
		script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1006, flags: "PA", data: "world", cut: 5},
			{fromA: true, seq: 1011, flags: "PA", data: "next"},
		}),
	} {
		var raw [][]byte
		for _, p := range packets(f, rawFrame, client4, server4, sc) {
			raw = append(raw, p.Data)
		}
		f.Add(uint8(0), packetRecords(raw))
	}
	f.Fuzz(func(t *testing.T, link uint8, records []byte) {
		lt := fuzzLinks[int(link)%len(fuzzLinks)]
		pkts, steps := splitRecords(records)
		// What each direction carried, decoded on the side.
		fed := map[dirKey]int{}
		// The TCP packets of each connection, for the Evidence.
		byConn := map[connKey][]Packet{}
		var order []connKey
		d := newDecoder()
		ts := t0
		for i, p := range pkts {
			ts = ts.Add(time.Duration(steps[i]) * 100 * time.Millisecond)
			if d.decode(lt, p) == decodedTCP {
				fed[dirKey{d.src, d.dst}] += len(d.tcp.Payload)
				k := keyOf(d.src, d.dst)
				if byConn[k] == nil {
					order = append(order, k)
				}
				byConn[k] = append(byConn[k], Packet{Data: p, CI: ci(ts, len(p)), LinkType: lt})
			}
		}
		r := &recorder{}
		// ev holds every packet; small drops most of them.
		ev := NewEvidence(EvidenceOptions{Retain: 1000 * time.Hour})
		small := NewEvidence(EvidenceOptions{PerConnBytes: 700, TotalBytes: 2048, Retain: 1000 * time.Hour})
		a := NewAssembler(r.newStream, AssemblerOptions{IdleTimeout: 2 * time.Second, Evidence: ev})
		as := NewAssembler((&recorder{}).newStream, AssemblerOptions{IdleTimeout: 2 * time.Second, Evidence: small})
		ts = t0
		for i, p := range pkts {
			ts = ts.Add(time.Duration(steps[i]) * 100 * time.Millisecond)
			// Add must not keep or change the caller's bytes.
			cp := append([]byte(nil), p...)
			a.Add(Packet{Data: cp, CI: ci(ts, len(cp)), LinkType: lt})
			if !bytes.Equal(cp, p) {
				t.Fatalf("Add changed the packet bytes")
			}
			as.Add(Packet{Data: cp, CI: ci(ts, len(cp)), LinkType: lt})
			if st := small.Stats(); st.HeldBytes > 2048 {
				t.Fatalf("small evidence holds %d bytes", st.HeldBytes)
			}
		}
		a.Close()
		as.Close()
		for _, k := range order {
			want := byConn[k]
			for _, e := range []*Evidence{ev, small} {
				var out bytes.Buffer
				n, err := e.WritePcap(&out, k.hi, k.lo, time.Time{}, time.Time{})
				if err != nil && !errors.Is(err, ErrEvidenceEvicted) {
					t.Fatal(err)
				}
				src, serr := NewSource("evidence", &out)
				if serr != nil {
					t.Fatal(serr)
				}
				got, rerr := readAll(src)
				if rerr != nil || len(got) != n {
					t.Fatalf("%v<->%v: read %d of %d packets: %v", k.lo, k.hi, len(got), n, rerr)
				}
				// All of them, or the newest ones and an error saying so.
				if e == ev && n != len(want) || n > len(want) || (n < len(want)) != (err != nil) {
					t.Fatalf("%v<->%v: %d of %d packets held, %v", k.lo, k.hi, n, len(want), err)
				}
				for i, g := range got {
					w := want[len(want)-n+i]
					if !bytes.Equal(g.Data, w.Data) || !g.CI.Timestamp.Equal(w.CI.Timestamp) || g.LinkType != w.LinkType {
						t.Fatalf("%v<->%v: packet %d differs", k.lo, k.hi, i)
					}
				}
			}
		}
		got := map[dirKey]int{}
		for _, s := range r.streams {
			got[dirKey{s.a, s.b}] += s.bytes[0]
			got[dirKey{s.b, s.a}] += s.bytes[1]
			if s.closes != 1 {
				t.Fatalf("stream %v>%v closed %d times", s.a, s.b, s.closes)
			}
			for _, ev := range s.events {
				if len(ev) > 12 && ev[:12] == "after close:" || ev == "data after false" {
					t.Fatalf("event %q", ev)
				}
			}
		}
		for k, n := range got {
			if n > fed[k] {
				t.Fatalf("%v>%v: delivered %d bytes, only %d fed", k.src, k.dst, n, fed[k])
			}
		}
		st := a.Stats()
		if st.Packets != int64(len(pkts)) || st.DeliveredBytes > st.PayloadBytes ||
			st.NonTCP+st.Undecodable+st.TCPPackets != st.Packets || st.TCPConnections < int64(len(r.streams)) {
			t.Fatalf("stats %+v", st)
		}
	})
}
