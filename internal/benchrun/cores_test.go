package benchrun

import (
	"runtime"
	"testing"
	"time"
)

// TestCoreRoundTrip: the round trip is measured with two CPUs, a time
// between zero and the limit, and not measured (at once, not by spinning
// on) with one, with nothing to do, or once its time is up.
func TestCoreRoundTrip(t *testing.T) {
	tests := []struct {
		name          string
		procs         int
		rounds, tries int
		limit         time.Duration
		want          bool
	}{
		{name: "one CPU", procs: 1, rounds: 1000, tries: 3, limit: 10 * time.Second},
		{name: "no rounds", procs: 2, rounds: 0, tries: 3, limit: 10 * time.Second},
		{name: "no tries", procs: 2, rounds: 1000, tries: 0, limit: 10 * time.Second},
		{name: "time up", procs: 2, rounds: 1 << 40, tries: 3, limit: 0},
		// Two spinning threads that share one CPU take a time slice a
		// round trip: 1000 rounds fit in the limit even so.
		{name: "two CPUs", procs: 2, rounds: 1000, tries: 3, limit: 20 * time.Second, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.procs > runtime.NumCPU() {
				t.Skipf("%d CPUs, the case wants %d", runtime.NumCPU(), tc.procs)
			}
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			start := time.Now()
			d, ok := CoreRoundTrip(tc.rounds, tc.tries, tc.limit)
			if took := time.Since(start); took > tc.limit+5*time.Second {
				t.Fatalf("took %v with a limit of %v", took, tc.limit)
			}
			if ok != tc.want {
				t.Fatalf("measured %v (%v), want measured %v", ok, d, tc.want)
			}
			if !ok {
				return
			}
			if d <= 0 || d > tc.limit {
				t.Fatalf("round trip %v", d)
			}
		})
	}
}
