package detect

import (
	"testing"
	"time"
)

// TestBoundedState: over a long capture the batches remembered, and the age
// queue behind them, stay bounded by the window of packet time (or by
// MaxBatches), also when some exchanges complete long after they were sent.
func TestBoundedState(t *testing.T) {
	const n = 200_000 // one exchange per millisecond: 200 s of capture
	tests := []struct {
		name     string
		opts     Options
		late     int     // every late-th exchange completes, unanswered, 30 s after it was sent
		maxLive  int     // bound on remembered batches at any time
		resendMs float64 // every 100th batch is re-sent this much later; 0: none
	}{
		{"window", Options{Window: time.Minute}, 0, 60_000 + 10, 0},
		{"window, late completions", Options{Window: time.Minute}, 10, 90_000 + 10, 0},
		{"window, resends", Options{Window: time.Minute}, 0, 60_000 + 600 + 10, 5000}, // a resent batch lives a window after its resend
		{"max batches", Options{Window: time.Hour, MaxBatches: 1000}, 7, 1000, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(tt.opts)
			maxLive, maxQueue := 0, 0
			for i := range n {
				sent := float64(i)
				x := ex(conn1, int32(i), sent, sent+0.5, 0, int64(i), plain(uint32(i)))
				if tt.late > 0 && i%tt.late == 0 && i >= 30_000 {
					x = noResp(ex(conn1, int32(i), sent-30_000, noAnswer, 0, 0, plain(uint32(i))), "connection closed")
				}
				d.Produce(x)
				if tt.resendMs > 0 && i%100 == 0 && i > int(tt.resendMs) {
					j := i - int(tt.resendMs)
					d.Produce(ex(conn1, int32(n+i), sent, sent+0.5, 0, int64(n+i), plain(uint32(j))))
				}
				maxLive = max(maxLive, d.live)
				maxQueue = max(maxQueue, len(d.queue)-d.head)
			}
			if maxLive > tt.maxLive {
				t.Errorf("%d batches remembered at once, want at most %d", maxLive, tt.maxLive)
			}
			if maxQueue > 2*tt.maxLive+2048 {
				t.Errorf("age queue held %d entries, want about %d", maxQueue, tt.maxLive)
			}
			got := d.Flush()
			s := d.Stats()
			if s.Expired+s.Evicted == 0 {
				t.Errorf("nothing expired or evicted: %+v", s)
			}
			if tt.resendMs > 0 && tt.opts.MaxBatches == 0 && len(got) != n/100-int(tt.resendMs)/100-1 {
				t.Errorf("%d findings, want every resend found", len(got))
			}
		})
	}
}

// TestWindowEdge: a resend sent within the window after the batch's last
// attempt is grouped with it, even when its answer comes after the window.
func TestWindowEdge(t *testing.T) {
	tests := []struct {
		name     string
		resendMs float64 // send time of the resend; the first is answered at 10 ms
		want     int     // findings
	}{
		{"sent inside, answered outside", 60_005, 1},
		{"sent at the edge", 60_009, 1},
		{"sent outside", 60_011, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{Window: time.Minute})
			d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(1)))
			d.Produce(ex(conn1, 2, tt.resendMs, tt.resendMs+20, 0, 6, plain(1)))
			if got := d.Flush(); len(got) != tt.want {
				t.Errorf("%d findings, want %d", len(got), tt.want)
			}
		})
	}
}
