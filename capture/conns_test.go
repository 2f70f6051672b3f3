package capture

import (
	"net/netip"
	"testing"
	"time"
)

// evictStream is a recStream that is told of evictions.
type evictStream struct {
	*recStream
	evicts int
}

func (s *evictStream) Evict(ts time.Time) {
	s.evicts++
	s.Close(ts)
}

// TestMaxConnections: connections opened and never closed are held at most
// MaxConnections at once; beyond it the least recently active are closed
// early, counted, an Evicter told Evict, each stream closed once; the
// connections active since are kept, and one evicted that goes on in the
// capture comes back as a new stream, from the middle.
func TestMaxConnections(t *testing.T) {
	const (
		max   = 100
		conns = 1000
	)
	var (
		r       recorder
		streams []*evictStream
	)
	a := NewAssembler(func(x, y netip.AddrPort, ts time.Time) Stream {
		s := &evictStream{recStream: r.newStream(x, y, ts).(*recStream)}
		streams = append(streams, s)
		return s
	}, AssemblerOptions{MaxConnections: max})
	client := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 40000)
	}
	at := time.Duration(0)
	add := func(i int, s seg) {
		at += time.Millisecond
		s.at = at
		for _, p := range packets(t, rawFrame, client(i), server4, []seg{s}) {
			a.Add(p)
		}
	}
	for i := range conns {
		add(i, seg{fromA: true, seq: 100, flags: "S"})
		add(i, seg{fromA: true, seq: 101, flags: "PA", data: "hello"})
		// Connection 0 stays active throughout: never evicted.
		add(0, seg{fromA: true, seq: uint32(106 + 5*i), flags: "PA", data: "again"})
		if held := len(a.live); held > max {
			t.Fatalf("after %d connections: %d held, bound %d", i+1, held, max)
		}
	}
	st := a.Stats()
	if st.Evicted < conns-max || st.Evicted >= conns || st.IdleClosed != 0 {
		t.Errorf("evicted %d, idle closed %d; want at least %d evicted, none idle", st.Evicted, st.IdleClosed, conns-max)
	}
	if streams[0].evicts != 0 || streams[0].closes != 0 {
		t.Errorf("the connection active throughout was evicted (%d) or closed (%d)", streams[0].evicts, streams[0].closes)
	}
	// An evicted connection that goes on: a new stream, its data delivered.
	add(1, seg{fromA: true, seq: 106, flags: "PA", data: "later"})
	last := streams[len(streams)-1]
	if len(streams) != conns+1 || last.a != client(1) || last.bytes[0] != len("later") {
		t.Errorf("%d streams, the last %v with %d bytes; want a new stream of connection 1 with its data", len(streams), last.a, last.bytes[0])
	}
	a.Close()
	for i, s := range streams {
		if s.closes != 1 || s.evicts > 1 {
			t.Fatalf("stream %d: %d closes, %d evictions; want one close", i, s.closes, s.evicts)
		}
	}
	var evicts int64
	for _, s := range streams {
		evicts += int64(s.evicts)
	}
	if evicts != st.Evicted {
		t.Errorf("%d streams told Evict, %d counted", evicts, st.Evicted)
	}
}
