package capture

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// callLog records every call an Assembler makes to its Streams, exactly:
// each Data call with its bytes and time (the fast path must not merge or
// split them), Gaps, Ends, Evicts and Closes, stream by stream (a flush
// closes connections in the order of a map).
type callLog struct {
	streams []*logStream
	stopAt  int // Data returns false once a stream got this many bytes (0: never)
	refuseB bool
}

type logStream struct {
	b     strings.Builder
	bytes int
	stop  int
}

func (l *callLog) newStream(a, b netip.AddrPort, ts time.Time) Stream {
	if l.refuseB && b.Port()%2 == 1 {
		return nil
	}
	s := &logStream{stop: l.stopAt}
	fmt.Fprintf(&s.b, "open %d %s>%s %s\n", len(l.streams), a, b, ts.Format(time.RFC3339Nano))
	l.streams = append(l.streams, s)
	return s
}

func (l *callLog) String() string {
	var b strings.Builder
	for _, s := range l.streams {
		b.WriteString(s.b.String())
	}
	return b.String()
}

func (s *logStream) Data(fromA bool, data []byte, ts time.Time) bool {
	fmt.Fprintf(&s.b, "data %s %q %s\n", side(fromA), data, ts.Format(time.RFC3339Nano))
	s.bytes += len(data)
	return s.stop == 0 || s.bytes < s.stop
}

func (s *logStream) Gap(fromA bool, n int, ts time.Time) {
	fmt.Fprintf(&s.b, "gap %s %d %s\n", side(fromA), n, ts.Format(time.RFC3339Nano))
}

func (s *logStream) End(fromA, rst bool, ts time.Time) {
	fmt.Fprintf(&s.b, "end %s rst=%v %s\n", side(fromA), rst, ts.Format(time.RFC3339Nano))
}

func (s *logStream) Evict(ts time.Time) {
	fmt.Fprintf(&s.b, "evict %s\n", ts.Format(time.RFC3339Nano))
}

func (s *logStream) Close(ts time.Time) {
	fmt.Fprintf(&s.b, "close %s\n", ts.Format(time.RFC3339Nano))
}

// fastRun feeds pkts to an Assembler with the fast path on or off and
// returns the calls its Streams got, its Stats and how many segments took
// the fast path. With opts.Evidence set (to anything), the run keeps an
// Evidence of its own, small enough to drop packets, and the calls end
// with the pcap it writes of client4 and server4.
func fastRun(pkts []Packet, opts AssemblerOptions, noFast bool, stopAt int, refuse bool) (string, Stats, int) {
	l := &callLog{stopAt: stopAt, refuseB: refuse}
	ev := opts.Evidence
	if ev != nil {
		ev = NewEvidence(EvidenceOptions{Retain: time.Hour, PerConnBytes: 700, TotalBytes: 4096})
		opts.Evidence = ev
	}
	a := NewAssembler(l.newStream, opts)
	a.noFast = noFast
	for _, p := range pkts {
		a.Add(p)
	}
	a.Close()
	out := l.String()
	if ev != nil {
		var b bytes.Buffer
		n, err := ev.WritePcap(&b, client4, server4, time.Time{}, time.Time{})
		out += fmt.Sprintf("evidence: %d packets, %v, %x\n", n, err, b.Bytes())
	}
	return out, a.Stats(), a.fastSegments
}

// checkFastSame fails unless pkts give the same calls and Stats with the
// fast path on and off, and returns how many segments took it.
func checkFastSame(tb testing.TB, pkts []Packet, opts AssemblerOptions, stopAt int, refuse bool) int {
	tb.Helper()
	slow, slowSt, _ := fastRun(pkts, opts, true, stopAt, refuse)
	fast, fastSt, n := fastRun(pkts, opts, false, stopAt, refuse)
	if slow != fast {
		tb.Fatalf("fast path changes the calls:\nslow:\n%s\nfast:\n%s", slow, fast)
	}
	if slowSt != fastSt {
		tb.Fatalf("fast path changes the stats:\nslow %+v\nfast %+v", slowSt, fastSt)
	}
	return n
}

// inOrder is n in-order client segments of size bytes from seq 1001, each
// acknowledged by the server, at step apart.
func inOrder(n, size int, step time.Duration) []seg {
	var out []seg
	seq := uint32(1001)
	at := step
	for i := range n {
		d := strings.Repeat(string(rune('a'+i%26)), size)
		out = append(out, seg{fromA: true, seq: seq, flags: "PA", data: d, at: at},
			seg{fromA: false, seq: 5001, flags: "A", ack: seq + uint32(size), at: at + step/2})
		seq += uint32(size)
		at += step
	}
	return out
}

// fastCase is a capture to run with the fast path on and off.
type fastCase struct {
	name   string
	pkts   []Packet
	opts   AssemblerOptions
	stopAt int
	refuse bool
	fast   bool // some segments must take the fast path
}

// fastPathCases are TestFastPathSame's captures, and FuzzFastPath's seeds.
func fastPathCases(t testing.TB) []fastCase {
	ms := time.Millisecond
	tests := []fastCase{
		{name: "in order", fast: true, pkts: packets(t, rawFrame, client4, server4,
			script(handshake, inOrder(20, 100, ms), finish(3001, 5001)))},
		{name: "in order, ethernet, v6", fast: true, pkts: packets(t, frames[3], client6, server6,
			script(handshake, inOrder(20, 100, ms), finish(3001, 5001)))},
		{name: "mid-stream start", fast: true, pkts: packets(t, rawFrame, client4, server4, inOrder(10, 50, ms))},
		{name: "retransmission and overlap", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1006, flags: "PA", data: "world"},
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1008, flags: "PA", data: "rldxyz"},
			{fromA: true, seq: 1014, flags: "PA", data: "next"},
		}, finish(1018, 5001)))},
		{name: "retransmission, then the stream goes on", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1006, flags: "PA", data: "world"},
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1011, flags: "PA", data: "next"},
			{fromA: true, seq: 1015, flags: "PA", data: "more"},
		}))},
		{name: "reordered, late segment in the window", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "one"},
			{fromA: true, seq: 1007, flags: "PA", data: "three"},
			{fromA: true, seq: 1004, flags: "PA", data: "two"},
			{fromA: true, seq: 1012, flags: "PA", data: "four"},
			{fromA: true, seq: 1016, flags: "PA", data: "five"},
		}, finish(1020, 5001)))},
		{name: "hole acknowledged by the peer", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "aaaa"},
			{fromA: true, seq: 1009, flags: "PA", data: "cccc"},
			{fromA: false, seq: 5001, flags: "PA", data: "x", ack: 1013},
			{fromA: true, seq: 1013, flags: "PA", data: "dddd"},
			{fromA: true, seq: 1017, flags: "PA", data: "eeee"},
			{fromA: false, seq: 5002, flags: "PA", data: "y", ack: 1021},
		}, finish(1021, 5003)))},
		{name: "hole acknowledged by the peer, no reorder window", fast: true, opts: AssemblerOptions{ReorderWindow: -1}, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "aaaa"},
			{fromA: false, seq: 5001, flags: "PA", data: "w", ack: 1005},
			{fromA: true, seq: 1009, flags: "PA", data: "cccc"},
			{fromA: false, seq: 5002, flags: "PA", data: "x", ack: 1013},
			{fromA: true, seq: 1013, flags: "PA", data: "dddd"},
			{fromA: false, seq: 5003, flags: "PA", data: "y", ack: 1017},
		}, finish(1017, 5004)))},
		{name: "hole given up after the idle timeout", fast: true, opts: AssemblerOptions{IdleTimeout: time.Second}, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "aaaa"},
			{fromA: true, seq: 1009, flags: "PA", data: "cccc", at: 10 * ms},
			{fromA: false, seq: 5001, flags: "PA", data: "x", at: 3 * time.Second},
			{fromA: true, seq: 1013, flags: "PA", data: "dddd", at: 4 * time.Second},
			{fromA: false, seq: 5002, flags: "PA", data: "y", at: 4*time.Second + ms},
		}))},
		{name: "FIN ahead of its stream", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "aaaa"},
			{fromA: true, seq: 1013, flags: "FA"},
			{fromA: true, seq: 1005, flags: "PA", data: "bbbb"},
			{fromA: true, seq: 1009, flags: "PA", data: "cccc"},
			{fromA: false, seq: 5001, flags: "FA", ack: 1014},
		}))},
		{name: "RST", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, inOrder(4, 10, ms), []seg{
			{fromA: false, seq: 5001, flags: "R", at: 10 * ms},
			{fromA: true, seq: 1041, flags: "PA", data: "late", at: 11 * ms},
		}))},
		{name: "snap length cuts", fast: true, pkts: packets(t, rawFrame, client4, server4, script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "hello"},
			{fromA: true, seq: 1006, flags: "PA", data: "world", cut: 3},
			{fromA: true, seq: 1011, flags: "PA", data: "next"},
			{fromA: true, seq: 1015, flags: "PA", data: "more"},
		}, finish(1019, 5001)))},
		{name: "idle close and reuse of the 4-tuple", fast: true, opts: AssemblerOptions{IdleTimeout: time.Second}, pkts: packets(t, rawFrame, client4, server4, script(
			handshake, inOrder(3, 10, ms),
			[]seg{{fromA: true, seq: 1031, flags: "PA", data: "after idle", at: 5 * time.Second}},
			[]seg{{fromA: true, seq: 9000, flags: "S", at: 6 * time.Second}, {fromA: false, seq: 7000, flags: "SA"}, {fromA: true, seq: 9001, flags: "A"},
				{fromA: true, seq: 9001, flags: "PA", data: "second"}, {fromA: true, seq: 9007, flags: "PA", data: "conn"}},
		))},
		{name: "fast segments keep the connection open", fast: true, opts: AssemblerOptions{IdleTimeout: time.Second, FlushInterval: 100 * ms},
			pkts: packets(t, rawFrame, client4, server4, script(handshake, func() []seg {
				// The client sends for 5 s with no answer: reassembly sees
				// none of its segments but must not close it as idle.
				var out []seg
				for i := range 50 {
					out = append(out, seg{fromA: true, seq: 1001 + uint32(i)*4, flags: "PA", data: "abcd", at: time.Duration(i+1) * 100 * ms})
				}
				return out
			}()))},
		{name: "Data refused", fast: true, stopAt: 250, pkts: packets(t, rawFrame, client4, server4,
			script(handshake, inOrder(10, 100, ms), finish(2001, 5001)))},
		{name: "connection not taken", refuse: true, pkts: packets(t, rawFrame, client4, netip.AddrPortFrom(server4.Addr(), 9093),
			script(handshake, inOrder(5, 10, ms)))},
		{name: "evidence", fast: true, opts: AssemblerOptions{Evidence: &Evidence{}}, pkts: packets(t, rawFrame, client4, server4,
			script(handshake, inOrder(20, 100, ms), finish(3001, 5001)))},
	}
	// Many connections over a small bound: evicted, some of them while
	// their segments took the fast path.
	var many []Packet
	for i := range 40 {
		c := netip.AddrPortFrom(client4.Addr(), uint16(41000+i))
		many = append(many, packets(t, rawFrame, c, server4, script(handshake, inOrder(3, 10, time.Duration(i+1)*ms)))...)
	}
	sortPackets(many)
	return append(tests, fastCase{name: "evicted", fast: true, opts: AssemblerOptions{MaxConnections: 8}, pkts: many})
}

func TestFastPathSame(t *testing.T) {
	for _, tt := range fastPathCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			n := checkFastSame(t, tt.pkts, tt.opts, tt.stopAt, tt.refuse)
			if tt.fast && n == 0 {
				t.Errorf("no segment took the fast path")
			}
			if !tt.fast && n != 0 {
				t.Errorf("%d segments took the fast path", n)
			}
		})
	}
	for i, file := range seedFiles(t) {
		s, err := NewSource("seed", bytes.NewReader(file))
		if err != nil {
			continue
		}
		pkts, _ := readAll(s)
		t.Run(fmt.Sprintf("seed %d", i), func(t *testing.T) { checkFastSame(t, pkts, AssemblerOptions{}, 0, false) })
	}
}

// sortPackets orders packets by time, stably.
func sortPackets(p []Packet) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].CI.Timestamp.Before(p[j-1].CI.Timestamp); j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

// FuzzFastPath feeds any packets, at any times, to Assemblers with the
// fast path on and off: their Streams must get the same calls, and their
// Stats must be the same.
func FuzzFastPath(f *testing.F) {
	for _, tt := range fastPathCases(f) {
		link := slices.Index(fuzzLinks, tt.pkts[0].LinkType)
		if link < 0 || tt.stopAt > 0 || tt.refuse {
			continue
		}
		var raw [][]byte
		var steps []byte
		prev := tt.pkts[0].CI.Timestamp
		for _, p := range tt.pkts {
			raw = append(raw, p.Data)
			steps = append(steps, byte(min(p.CI.Timestamp.Sub(prev)/(100*time.Millisecond), 255)))
			prev = p.CI.Timestamp
		}
		records := packetRecords(raw)
		for i, off := 0, 0; i < len(raw); i++ { // the steps, in the records' first bytes
			records[off] = steps[i]
			off += 3 + len(raw[i])
		}
		f.Add(uint8(link), uint8(tt.opts.MaxConnections), records)
	}
	for _, sc := range [][]seg{
		script(handshake, inOrder(6, 8, time.Millisecond), finish(1049, 5001)),
		script(handshake, []seg{
			{fromA: true, seq: 1001, flags: "PA", data: "one"},
			{fromA: true, seq: 1007, flags: "PA", data: "three"},
			{fromA: true, seq: 1004, flags: "PA", data: "two"},
			{fromA: true, seq: 1013, flags: "FA"},
			{fromA: true, seq: 1012, flags: "PA", data: "f"},
			{fromA: false, seq: 5001, flags: "PA", data: "x", ack: 1009},
			{fromA: false, seq: 5002, flags: "R"},
		}),
	} {
		var raw [][]byte
		for _, p := range packets(f, rawFrame, client4, server4, sc) {
			raw = append(raw, p.Data)
		}
		f.Add(uint8(0), uint8(0), packetRecords(raw))
	}
	f.Fuzz(func(t *testing.T, link, bound uint8, records []byte) {
		lt := fuzzLinks[int(link)%len(fuzzLinks)]
		raw, steps := splitRecords(records)
		var pkts []Packet
		ts := t0
		for i, p := range raw {
			ts = ts.Add(time.Duration(steps[i]) * 100 * time.Millisecond)
			pkts = append(pkts, Packet{Data: p, CI: ci(ts, len(p)), LinkType: lt})
		}
		opts := AssemblerOptions{IdleTimeout: 2 * time.Second, MaxConnections: 1 + int(bound%8)}
		checkFastSame(t, pkts, opts, int(bound/8), false)
	})
}
