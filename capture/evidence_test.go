package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// conversation is a connection with data both ways, a segment out of order
// and one cut by the snap length.
var conversation = script(handshake, []seg{
	{fromA: true, seq: 1001, flags: "PA", data: "produce-1"},
	{fromA: false, seq: 5001, flags: "PA", data: "ok-1"},
	{fromA: true, seq: 1019, flags: "PA", data: "produce-3"},
	{fromA: true, seq: 1010, flags: "PA", data: "produce-2"},
	{fromA: false, seq: 5005, flags: "PA", data: "ok-2"},
	{fromA: true, seq: 1028, flags: "PA", data: "produce-4", cut: 4},
	{fromA: false, seq: 5009, flags: "PA", data: "ok-4"},
}, finish(1037, 5013))

// readEvidence reads every packet of a capture, copying their data.
func readEvidence(tb testing.TB, s *Source) []Packet {
	tb.Helper()
	var out []Packet
	for {
		p, err := s.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		p.Data = append([]byte(nil), p.Data...)
		out = append(out, p)
	}
}

// sameCaptured compares packets by bytes, capture info and link type.
func sameCaptured(tb testing.TB, got, want []Packet) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%d packets, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !bytes.Equal(g.Data, w.Data) || !g.CI.Timestamp.Equal(w.CI.Timestamp) ||
			g.CI.CaptureLength != w.CI.CaptureLength || g.CI.Length != w.CI.Length || g.LinkType != w.LinkType {
			tb.Errorf("packet %d:\n got %v %d/%d %v % x\nwant %v %d/%d %v % x", i,
				g.CI.Timestamp, g.CI.CaptureLength, g.CI.Length, g.LinkType, g.Data,
				w.CI.Timestamp, w.CI.CaptureLength, w.CI.Length, w.LinkType, w.Data)
		}
	}
}

// reassemble feeds packets to a new Assembler and returns what its Streams
// got.
func reassemble(pkts []Packet) string {
	r := &recorder{}
	a := NewAssembler(r.newStream, AssemblerOptions{})
	for _, p := range pkts {
		a.Add(p)
	}
	a.Close()
	return r.dump()
}

// TestEvidenceRoundTrip records a connection of every link type, writes it
// back (endpoints in either order) and reads it with Open: the same packets,
// byte for byte, which reassemble to the same bytes.
func TestEvidenceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, f := range frames {
		t.Run(f.name, func(t *testing.T) {
			client, server := client4, server4
			if f.v6 {
				client, server = client6, server6
			}
			pkts := packets(t, f, client, server, conversation)
			ev := NewEvidence(EvidenceOptions{})
			r := &recorder{}
			a := NewAssembler(r.newStream, AssemblerOptions{Evidence: ev})
			feed(t, a, pkts)
			a.Close()
			for _, order := range [][2]netip.AddrPort{{client, server}, {server, client}} {
				path := filepath.Join(dir, f.name+".pcap")
				out, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				n, err := ev.WritePcap(out, order[0], order[1], time.Time{}, time.Time{})
				if err != nil || n != len(pkts) {
					t.Fatalf("WritePcap: %d packets, %v; want %d", n, err, len(pkts))
				}
				if err := out.Close(); err != nil {
					t.Fatal(err)
				}
				src, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				got := readEvidence(t, src)
				src.Close()
				sameCaptured(t, got, pkts)
				if g, w := reassemble(got), r.dump(); g != w {
					t.Errorf("reassembled\n%s\nwant\n%s", g, w)
				}
			}
			if st := a.Stats().Evidence; st.Packets != int64(len(pkts)) || st.DroppedPackets != 0 || st.Connections != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestEvidenceMixedLinkTypes: a connection seen on interfaces of two link
// types is written as a pcapng with an interface per link type.
func TestEvidenceMixedLinkTypes(t *testing.T) {
	raw := packets(t, frames[0], client4, server4, conversation)
	eth := packets(t, frames[4], client4, server4, conversation)
	var pkts []Packet
	for i := range raw {
		p := raw[i]
		if i%2 == 1 {
			p = eth[i]
		}
		pkts = append(pkts, p)
	}
	ev := NewEvidence(EvidenceOptions{})
	a := NewAssembler((&recorder{}).newStream, AssemblerOptions{Evidence: ev})
	feed(t, a, pkts)
	var out bytes.Buffer
	if n, err := ev.WritePcap(&out, client4, server4, time.Time{}, time.Time{}); err != nil || n != len(pkts) {
		t.Fatalf("WritePcap: %d, %v", n, err)
	}
	src, err := NewSource("mixed", &out)
	if err != nil {
		t.Fatal(err)
	}
	if src.ng == nil {
		t.Error("not a pcapng")
	}
	sameCaptured(t, readEvidence(t, src), pkts)
}

func TestEvidenceTimeRange(t *testing.T) {
	pkts := packets(t, rawFrame, client4, server4, conversation) // 1ms apart from t0+1ms
	ev := NewEvidence(EvidenceOptions{})
	a := NewAssembler((&recorder{}).newStream, AssemblerOptions{Evidence: ev})
	feed(t, a, pkts)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name     string
		from, to time.Time
		want     []int // indices into pkts
	}{
		{"all", time.Time{}, time.Time{}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"bounds inclusive", ms(4), ms(6), []int{3, 4, 5}},
		{"open start", time.Time{}, ms(2), []int{0, 1}},
		{"open end", ms(12), time.Time{}, []int{11, 12}},
		{"between packets", ms(4).Add(time.Microsecond), ms(5).Add(-time.Microsecond), nil},
		{"after", ms(100), ms(200), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := ev.WritePcap(&out, server4, client4, tt.from, tt.to)
			if err != nil || n != len(tt.want) {
				t.Fatalf("WritePcap: %d, %v; want %d", n, err, len(tt.want))
			}
			src, err := NewSource("range", &out)
			if err != nil {
				t.Fatal(err)
			}
			var want []Packet
			for _, i := range tt.want {
				want = append(want, pkts[i])
			}
			sameCaptured(t, readEvidence(t, src), want)
		})
	}
}

// bulk is n in-order data segments of one connection, size bytes each,
// 1ms apart from t0+at.
func bulk(tb testing.TB, client netip.AddrPort, at time.Duration, n, size int) []Packet {
	var s []seg
	for i := range n {
		s = append(s, seg{fromA: true, seq: uint32(1 + i*size), flags: "PA", data: strings.Repeat("x", size)})
	}
	pkts := packets(tb, rawFrame, client, server4, s)
	for i := range pkts {
		pkts[i].CI.Timestamp = t0.Add(at + time.Duration(i)*time.Millisecond)
	}
	return pkts
}

// held writes the evidence of client<->server4 and returns the times of
// the packets, as ms after t0, and the error.
func held(tb testing.TB, ev *Evidence, client netip.AddrPort, from time.Time) ([]int, error) {
	tb.Helper()
	var out bytes.Buffer
	n, err := ev.WritePcap(&out, client, server4, from, time.Time{})
	if err != nil && !errors.Is(err, ErrEvidenceEvicted) {
		tb.Fatal(err)
	}
	src, serr := NewSource("held", &out)
	if serr != nil {
		tb.Fatal(serr)
	}
	var ms []int
	for _, p := range readEvidence(tb, src) {
		ms = append(ms, int(p.CI.Timestamp.Sub(t0)/time.Millisecond))
	}
	if len(ms) != n {
		tb.Errorf("WritePcap said %d packets, wrote %d", n, len(ms))
	}
	return ms, err
}

func TestEvidenceBounds(t *testing.T) {
	// Each packet is 40 bytes of headers, 100 of payload, 30 of evidence
	// header: 170 bytes.
	const size, rec = 100, 170
	other := netip.AddrPortFrom(client4.Addr(), 40001)
	tests := []struct {
		name   string
		opts   EvidenceOptions
		pkts   func(t *testing.T) []Packet
		want   map[netip.AddrPort][]int // ms after t0 of the packets held
		evict  map[netip.AddrPort]bool  // WritePcap of the whole range says evicted
		from   map[netip.AddrPort]int   // a range that starts after what was evicted: no error
		drops  int64
		holdLE int64 // HeldBytes at most
	}{{
		name:  "per connection",
		opts:  EvidenceOptions{PerConnBytes: 5 * rec},
		pkts:  func(t *testing.T) []Packet { return bulk(t, client4, 0, 10, size) },
		want:  map[netip.AddrPort][]int{client4: {5, 6, 7, 8, 9}},
		evict: map[netip.AddrPort]bool{client4: true},
		from:  map[netip.AddrPort]int{client4: 5},
		drops: 5,
	}, {
		name: "per connection, others untouched",
		opts: EvidenceOptions{PerConnBytes: 3 * rec},
		pkts: func(t *testing.T) []Packet {
			return append(bulk(t, other, 0, 2, size), bulk(t, client4, 10*time.Millisecond, 6, size)...)
		},
		want:  map[netip.AddrPort][]int{client4: {13, 14, 15}, other: {0, 1}},
		evict: map[netip.AddrPort]bool{client4: true, other: false},
		drops: 3,
	}, {
		name: "total, oldest of all connections first",
		// 4096 bytes: 8 slabs of 512.
		opts: EvidenceOptions{TotalBytes: 4096},
		pkts: func(t *testing.T) []Packet {
			// Interleaved: other at 0,2,4,... client4 at 1,3,5,...
			a, b := bulk(t, other, 0, 20, size), bulk(t, client4, 0, 20, size)
			var out []Packet
			for i := range a {
				a[i].CI.Timestamp = t0.Add(time.Duration(2*i) * time.Millisecond)
				b[i].CI.Timestamp = t0.Add(time.Duration(2*i+1) * time.Millisecond)
				out = append(out, a[i], b[i])
			}
			return out
		},
		// The 20 newest of both connections fit (3400 bytes in 512 byte
		// slabs); the 20 oldest went first.
		want:   map[netip.AddrPort][]int{other: {20, 22, 24, 26, 28, 30, 32, 34, 36, 38}, client4: {21, 23, 25, 27, 29, 31, 33, 35, 37, 39}},
		evict:  map[netip.AddrPort]bool{client4: true, other: true},
		from:   map[netip.AddrPort]int{client4: 20, other: 20},
		drops:  20,
		holdLE: 4096,
	}, {
		name:  "larger than the connection bound",
		opts:  EvidenceOptions{PerConnBytes: rec - 1},
		pkts:  func(t *testing.T) []Packet { return bulk(t, client4, 0, 2, size) },
		want:  map[netip.AddrPort][]int{client4: nil},
		evict: map[netip.AddrPort]bool{client4: true},
		drops: 2,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := NewEvidence(tt.opts)
			a := NewAssembler((&recorder{}).newStream, AssemblerOptions{Evidence: ev})
			feed(t, a, tt.pkts(t))
			for c, want := range tt.want {
				got, err := held(t, ev, c, time.Time{})
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v: held %v, want %v", c, got, want)
				}
				if errors.Is(err, ErrEvidenceEvicted) != tt.evict[c] {
					t.Errorf("%v: error %v, want evicted %v", c, err, tt.evict[c])
				}
				if ms, ok := tt.from[c]; ok {
					if got, err := held(t, ev, c, t0.Add(time.Duration(ms)*time.Millisecond)); err != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("%v from %dms: held %v, %v", c, ms, got, err)
					}
				}
			}
			st := ev.Stats()
			if st.DroppedPackets != tt.drops || st.DroppedBytes != tt.drops*(size+40) {
				t.Errorf("dropped %d packets, %d bytes; want %d", st.DroppedPackets, st.DroppedBytes, tt.drops)
			}
			if tt.holdLE > 0 && st.HeldBytes > tt.holdLE {
				t.Errorf("holds %d bytes, bound %d", st.HeldBytes, tt.holdLE)
			}
			if st.Packets-st.DroppedPackets != int64(len(tt.want[client4])+len(tt.want[other])) && tt.name != "larger than the connection bound" {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestEvidenceBoundsChurn adds packets of many sizes over many connections
// to a small Evidence: the bounds hold and every connection's packets are
// its newest ones, in order.
func TestEvidenceBoundsChurn(t *testing.T) {
	ev := NewEvidence(EvidenceOptions{PerConnBytes: 3000, TotalBytes: 16384})
	a := NewAssembler((&recorder{}).newStream, AssemblerOptions{Evidence: ev})
	seq := map[uint16]uint32{}
	last := map[uint16]int{}
	for i := range 3000 {
		port := uint16(40000 + (i*7)%13)
		size := (i * 37) % 1400
		c := netip.AddrPortFrom(client4.Addr(), port)
		if seq[port] == 0 {
			seq[port] = 1
		}
		p := packets(t, rawFrame, c, server4, []seg{{fromA: true, seq: seq[port], flags: "PA", data: strings.Repeat("y", size), at: time.Duration(i) * time.Millisecond}})
		seq[port] += uint32(size)
		last[port] = i
		a.Add(p[0])
		if st := ev.Stats(); st.HeldBytes > 16384 {
			t.Fatalf("packet %d: holds %d bytes", i, st.HeldBytes)
		}
	}
	total := 0
	for port, l := range last {
		got, err := held(t, ev, netip.AddrPortFrom(client4.Addr(), port), time.Time{})
		if err != nil && !errors.Is(err, ErrEvidenceEvicted) {
			t.Fatal(err)
		}
		for j, ms := range got {
			if ms != l-13*(len(got)-1-j) {
				t.Fatalf("port %d holds %v, last packet at %d", port, got, l)
			}
		}
		total += len(got)
	}
	st := ev.Stats()
	if int64(total) != st.Packets-st.DroppedPackets {
		t.Errorf("holds %d packets, stats %+v", total, st)
	}
}

func TestEvidenceIgnored(t *testing.T) {
	other := netip.AddrPortFrom(client4.Addr(), 40001)
	kafka := script(handshake, []seg{{fromA: true, seq: 1001, flags: "PA", data: "produce"}}, finish(1008, 5001))
	tests := []struct {
		name string
		rec  *recorder
		pkts func(t *testing.T) []Packet
		want map[netip.AddrPort]int // packets held
	}{{
		name: "refused by NewStreamFunc",
		rec:  &recorder{refuse: func(a, b netip.AddrPort) bool { return a == other || b == other }},
		pkts: func(t *testing.T) []Packet {
			return append(packets(t, rawFrame, client4, server4, kafka), packets(t, rawFrame, other, server4, kafka)...)
		},
		want: map[netip.AddrPort]int{client4: 7, other: 0},
	}, {
		name: "Data returned false",
		rec:  &recorder{stopAt: 1},
		pkts: func(t *testing.T) []Packet { return packets(t, rawFrame, client4, server4, kafka) },
		want: map[netip.AddrPort]int{client4: 0},
	}, {
		name: "4-tuple reused by an ignored connection",
		rec: &recorder{refuse: func() func(a, b netip.AddrPort) bool {
			n := 0
			return func(a, b netip.AddrPort) bool { n++; return n > 1 }
		}()},
		pkts: func(t *testing.T) []Packet {
			second := packets(t, rawFrame, client4, server4, []seg{
				{fromA: true, seq: 9000, flags: "S"},
				{fromA: true, seq: 9001, flags: "PA", data: "GET /"},
			})
			for i := range second {
				second[i].CI.Timestamp = second[i].CI.Timestamp.Add(time.Second)
			}
			return append(packets(t, rawFrame, client4, server4, kafka), second...)
		},
		want: map[netip.AddrPort]int{client4: 7},
	}, {
		name: "4-tuple reused by a kept connection after an ignored one",
		rec: &recorder{refuse: func() func(a, b netip.AddrPort) bool {
			n := 0
			return func(a, b netip.AddrPort) bool { n++; return n == 1 }
		}()},
		pkts: func(t *testing.T) []Packet {
			second := packets(t, rawFrame, client4, server4, []seg{
				{fromA: true, seq: 9000, flags: "S"},
				{fromA: true, seq: 9001, flags: "PA", data: "produce"},
			})
			for i := range second {
				second[i].CI.Timestamp = second[i].CI.Timestamp.Add(time.Second)
			}
			return append(packets(t, rawFrame, client4, server4, kafka), second...)
		},
		want: map[netip.AddrPort]int{client4: 2},
	}, {
		name: "new SYN on an open connection, the new one ignored",
		rec: &recorder{refuse: func() func(a, b netip.AddrPort) bool {
			n := 0
			return func(a, b netip.AddrPort) bool { n++; return n > 1 }
		}()},
		pkts: func(t *testing.T) []Packet {
			return packets(t, rawFrame, client4, server4, script(handshake, []seg{
				{fromA: true, seq: 1001, flags: "PA", data: "produce"},
				{fromA: true, seq: 7000, flags: "S"},
				{fromA: true, seq: 7001, flags: "PA", data: "GET /"},
			}))
		},
		want: map[netip.AddrPort]int{client4: 4},
	}, {
		name: "new SYN on an open connection, both kept",
		rec:  &recorder{},
		pkts: func(t *testing.T) []Packet {
			return packets(t, rawFrame, client4, server4, script(handshake, []seg{
				{fromA: true, seq: 1001, flags: "PA", data: "produce"},
				{fromA: true, seq: 7000, flags: "S"},
				{fromA: true, seq: 7001, flags: "PA", data: "produce"},
			}))
		},
		want: map[netip.AddrPort]int{client4: 6},
	}, {
		name: "new SYN on an open ignored connection, the new one kept",
		rec: &recorder{refuse: func() func(a, b netip.AddrPort) bool {
			n := 0
			return func(a, b netip.AddrPort) bool { n++; return n == 1 }
		}()},
		pkts: func(t *testing.T) []Packet {
			return packets(t, rawFrame, client4, server4, script(handshake, []seg{
				{fromA: true, seq: 1001, flags: "PA", data: "GET /"},
				{fromA: true, seq: 7000, flags: "S"},
				{fromA: true, seq: 7001, flags: "PA", data: "produce"},
			}))
		},
		want: map[netip.AddrPort]int{client4: 2},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := NewEvidence(EvidenceOptions{})
			a := NewAssembler(tt.rec.newStream, AssemblerOptions{Evidence: ev})
			feed(t, a, tt.pkts(t))
			for c, want := range tt.want {
				got, err := held(t, ev, c, time.Time{})
				if len(got) != want || (want == 0) != errors.Is(err, ErrEvidenceEvicted) {
					t.Errorf("%v: held %v, %v; want %d packets", c, got, err, want)
				}
			}
			if st := ev.Stats(); st.HeldBytes != 0 && tt.want[client4] == 0 {
				t.Errorf("holds %d bytes", st.HeldBytes)
			}
		})
	}
}

// TestEvidenceExpiry: a closed connection's packets go Retain after its
// last packet, by packet time or Tick time; an open one's stay until it is
// closed as idle (IdleTimeout), then go at once, its last packet being more
// than Retain ago.
func TestEvidenceExpiry(t *testing.T) {
	const retain = time.Minute
	closed := packets(t, rawFrame, client4, server4, script(handshake, finish(1001, 5001)))                                     // ends at t0+6ms
	open := packets(t, frames[1], client6, server6, script(handshake, []seg{{fromA: true, seq: 1001, flags: "PA", data: "x"}})) // ends at t0+4ms
	tests := []struct {
		name       string
		tick       time.Duration // after t0, several times up to it
		byPacket   bool          // a packet of another connection instead of Tick
		closedHeld bool
		openHeld   bool
		idleClosed int64
	}{
		{"before retain", retain, false, true, true, 0},
		{"closed expired", retain + 2*time.Second, false, false, true, 0},
		{"closed expired by packet time", retain + 2*time.Second, true, false, true, 0},
		{"open closed as idle and expired", 2*time.Minute + 2*time.Second, false, false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := NewEvidence(EvidenceOptions{Retain: retain})
			a := NewAssembler((&recorder{}).newStream, AssemblerOptions{Evidence: ev, IdleTimeout: 2 * time.Minute})
			feed(t, a, closed)
			feed(t, a, open)
			third := netip.AddrPortFrom(client4.Addr(), 50000)
			for d := time.Second; d <= tt.tick; d += time.Second {
				if tt.byPacket {
					p := packets(t, rawFrame, third, server4, []seg{{fromA: true, seq: uint32(d / time.Second), flags: "A", at: d}})
					a.Add(p[0])
				} else {
					a.Tick(t0.Add(d))
				}
			}
			for _, c := range []struct {
				client, server netip.AddrPort
				want           bool
			}{{client4, server4, tt.closedHeld}, {client6, server6, tt.openHeld}} {
				var out bytes.Buffer
				n, err := ev.WritePcap(&out, c.client, c.server, time.Time{}, time.Time{})
				if (n > 0) != c.want || (n == 0) != errors.Is(err, ErrEvidenceEvicted) {
					t.Errorf("%v: %d packets, %v; want held %v", c.client, n, err, c.want)
				}
			}
			st := a.Stats()
			if st.IdleClosed != tt.idleClosed {
				t.Errorf("IdleClosed %d, want %d", st.IdleClosed, tt.idleClosed)
			}
			if !tt.closedHeld && st.Evidence.ExpiredPackets < int64(len(closed)) {
				t.Errorf("stats %+v", st.Evidence)
			}
		})
	}
}

// TestTick: without packets, Tick delivers data stuck behind a hole after
// IdleTimeout, closes idle connections (counted), and does nothing before.
func TestTick(t *testing.T) {
	r := &recorder{}
	a := NewAssembler(r.newStream, AssemblerOptions{IdleTimeout: 10 * time.Second})
	feed(t, a, packets(t, rawFrame, client4, server4, script(handshake, []seg{
		{fromA: true, seq: 1001, flags: "PA", data: "one"},
		{fromA: true, seq: 1010, flags: "PA", data: "three"}, // "two" (6 bytes) lost
	})))
	want := []string{"A one"}
	check := func(at time.Duration, idle int64) {
		t.Helper()
		if got := events(r); !reflect.DeepEqual(got, [][]string{want}) {
			t.Errorf("after Tick at %v: %q, want %q", at, got, want)
		}
		if st := a.Stats(); st.IdleClosed != idle {
			t.Errorf("after Tick at %v: IdleClosed %d, want %d", at, st.IdleClosed, idle)
		}
	}
	for _, at := range []time.Duration{5 * time.Millisecond, time.Second, 5 * time.Second, 10 * time.Second} {
		a.Tick(t0.Add(at))
		check(at, 0)
	}
	a.Tick(t0.Add(11 * time.Second))
	want = append(want, "A gap 6", "A three", "close")
	check(11*time.Second, 1)
	if n := testing.AllocsPerRun(100, func() { a.Tick(t0.Add(11 * time.Second)) }); n != 0 {
		t.Errorf("Tick with nothing due: %v allocations", n)
	}
	// A connection ended by FIN is not idle.
	r2 := &recorder{}
	a2 := NewAssembler(r2.newStream, AssemblerOptions{IdleTimeout: 10 * time.Second})
	feed(t, a2, packets(t, rawFrame, client4, server4, script(handshake, finish(1001, 5001))))
	a2.Tick(t0.Add(time.Second))
	a2.Tick(t0.Add(time.Minute))
	if st := a2.Stats(); st.IdleClosed != 0 || len(r2.streams) != 1 || r2.streams[0].closes != 1 {
		t.Errorf("FIN: IdleClosed %d, %s", st.IdleClosed, r2.dump())
	}
}

// TestEvidenceAllocations: with an Evidence, Add allocates nothing in the
// steady state, once the pool has its slabs, evicting or not.
func TestEvidenceAllocations(t *testing.T) {
	for _, total := range []int{0, 64 << 10} {
		ev := NewEvidence(EvidenceOptions{TotalBytes: total})
		tmpl := ipTCP(t, false, client4, server4, seg{fromA: true, seq: 1, flags: "PA", data: strings.Repeat("p", 1000)})
		a := NewAssembler(func(netip.AddrPort, netip.AddrPort, time.Time) Stream { return &nopStream{keep: true} }, AssemblerOptions{Evidence: ev})
		seq, ts := uint32(1), t0
		add := func() {
			putSeq(tmpl, seq)
			seq += 1000
			ts = ts.Add(time.Microsecond)
			a.Add(Packet{Data: tmpl, CI: ci(ts, len(tmpl)), LinkType: layers.LinkTypeRaw})
		}
		// Fill the connection bound (8 MiB) so that the slabs are pooled.
		for range 9000 {
			add()
		}
		if n := testing.AllocsPerRun(1000, add); n != 0 {
			t.Errorf("TotalBytes %d: %v allocations per Add", total, n)
		}
		if st := ev.Stats(); st.DroppedPackets == 0 {
			t.Errorf("TotalBytes %d: nothing dropped: %+v", total, st)
		}
	}
}

func putSeq(ip []byte, seq uint32) { binary.BigEndian.PutUint32(ip[24:], seq) }

// TestEvidenceConns: the packets of several connections go into one pcap,
// merged by time; a connection with nothing held makes it partial.
func TestEvidenceConns(t *testing.T) {
	client2 := netip.MustParseAddrPort("10.0.0.1:40001")
	one := bulk(t, client4, 0, 3, 10)                    // t0+0, +1, +2 ms
	two := bulk(t, client2, 500*time.Microsecond, 3, 10) // t0+0.5, +1.5, +2.5 ms
	ev := NewEvidence(EvidenceOptions{})
	a := NewAssembler((&recorder{}).newStream, AssemblerOptions{Evidence: ev})
	all := append(append([]Packet(nil), one...), two...)
	feed(t, a, all)

	var out bytes.Buffer
	n, err := ev.WritePcapConns(&out, []Endpoints{{client4, server4}, {server4, client2}}, time.Time{}, time.Time{})
	if err != nil || n != 6 {
		t.Fatalf("WritePcapConns: %d, %v; want 6 packets", n, err)
	}
	src, err := NewSource("conns", &out)
	if err != nil {
		t.Fatal(err)
	}
	sameCaptured(t, readEvidence(t, src), []Packet{one[0], two[0], one[1], two[1], one[2], two[2]})

	unknown := netip.MustParseAddrPort("10.9.9.9:1")
	out.Reset()
	n, err = ev.WritePcapConns(&out, []Endpoints{{client4, server4}, {unknown, server4}}, time.Time{}, time.Time{})
	if n != 3 || !errors.Is(err, ErrEvidenceEvicted) {
		t.Errorf("with an unknown connection: %d, %v; want 3 and partial", n, err)
	}
}
