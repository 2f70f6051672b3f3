package profile

import (
	"net/netip"
	"testing"
	"time"
)

func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b1 := netip.MustParseAddrPort("10.0.0.1:9092")
	b2 := netip.MustParseAddrPort("10.0.0.2:9092")
	tests := []struct {
		name    string
		buckets int
		adds    []time.Duration // after t0; broker b1, latency 1ms
		width   time.Duration
		counts  []int64
	}{
		{"one", 8, []time.Duration{0}, time.Millisecond, []int64{1}},
		{"within", 4, []time.Duration{0, time.Millisecond, 3 * time.Millisecond}, time.Millisecond, []int64{1, 1, 1}},
		{"doubles", 4, []time.Duration{0, time.Millisecond, 4 * time.Millisecond}, 2 * time.Millisecond, []int64{2, 1}},
		{"long capture", 4, []time.Duration{0, time.Hour}, 1048576 * time.Millisecond, []int64{1, 1}},
		{"earlier shifts", 4, []time.Duration{2 * time.Millisecond, 0}, time.Millisecond, []int64{1, 1}},
		{"earlier past room counts first", 2, []time.Duration{time.Hour, time.Hour + time.Millisecond, 0}, time.Millisecond, []int64{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := NewTimeline(tt.buckets)
			for _, d := range tt.adds {
				tl.Add(b1, t0.Add(d), time.Millisecond)
			}
			if tl.Width() != tt.width {
				t.Errorf("width %v, want %v", tl.Width(), tt.width)
			}
			s := tl.Series()
			if len(s) != 1 {
				t.Fatalf("%d series, want 1", len(s))
			}
			var got []int64
			for _, b := range s[0].Buckets {
				got = append(got, b.Count)
				if b.P50Millis < 0.9 || b.P50Millis > 1.1 {
					t.Errorf("p50 %v ms, want about 1", b.P50Millis)
				}
			}
			if len(got) != len(tt.counts) {
				t.Fatalf("counts %v, want %v", got, tt.counts)
			}
			for i := range got {
				if got[i] != tt.counts[i] {
					t.Fatalf("counts %v, want %v", got, tt.counts)
				}
			}
		})
	}
	t.Run("brokers bounded", func(t *testing.T) {
		tl := NewTimeline(4)
		tl.Add(b2, t0, time.Millisecond)
		tl.Add(b1, t0, time.Millisecond)
		for i := range 100 {
			tl.Add(netip.AddrPortFrom(netip.MustParseAddr("10.1.0.1"), uint16(1000+i)), t0, time.Millisecond)
		}
		s := tl.Series()
		if len(s) != MaxTimelineBrokers {
			t.Fatalf("%d series, want %d", len(s), MaxTimelineBrokers)
		}
		if s[0].Broker != (netip.AddrPort{}) || s[1].Broker != b1 {
			t.Errorf("first brokers %v %v, want the others then %v", s[0].Broker, s[1].Broker, b1)
		}
		var n int64
		for _, x := range s {
			n += x.Buckets[0].Count
		}
		if n != 102 {
			t.Errorf("%d counted, want 102", n)
		}
	})
}

// TestTimelineClone: a clone does not change with later Adds to the
// original.
func TestTimelineClone(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b1 := netip.MustParseAddrPort("10.0.0.1:9092")
	tl := NewTimeline(4)
	tl.Add(b1, t0, time.Millisecond)
	c := tl.Clone()
	tl.Add(b1, t0, time.Millisecond)
	tl.Add(b1, t0.Add(time.Hour), time.Millisecond)
	s := c.Series()
	if len(s) != 1 || len(s[0].Buckets) != 1 || s[0].Buckets[0].Count != 1 || c.Width() != time.Millisecond {
		t.Errorf("clone changed: %+v, width %v", s, c.Width())
	}
}

// TestProfilerTimeline: the profiler's timeline counts every answered
// exchange, of every broker, findings or not, and no unanswered one.
func TestProfilerTimeline(t *testing.T) {
	pr := New(Options{})
	pr.Produce(ex(conn1, 1, 0, 5, 0, 0, plain(1)))
	pr.Produce(ex(conn2, 2, 10, 12, 0, 1, plain(2)))
	pr.Produce(noResp(ex(conn1, 3, 20, noAnswer, 0, 0, plain(3)), "connection_closed"))
	s := pr.Timeline().Series()
	if len(s) != 1 || s[0].Broker != conn1.Broker {
		t.Fatalf("series %+v, want one of broker %v", s, conn1.Broker)
	}
	var n int64
	for _, b := range s[0].Buckets {
		n += b.Count
	}
	if n != 2 {
		t.Errorf("%d answered requests counted, want 2", n)
	}
}
