package benchrun

import (
	"runtime"
	"testing"
	"time"
)

// TestCoreRoundTrip: the round trip is measured with two CPUs, and not
// measured (at once, not by spinning on) with one, with nothing to do, or
// once its time is up.
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
		{name: "two CPUs", procs: 2, rounds: 20000, tries: 3, limit: 10 * time.Second, want: true},
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
			if !ok {
				if tc.want {
					// Two threads spinning need two idle CPUs: a loaded
					// machine may not give them.
					t.Logf("not measured: the two threads did not both run in %v", tc.limit)
				}
				return
			}
			if !tc.want {
				t.Fatalf("measured %v", d)
			}
			if d <= 0 || d > tc.limit {
				t.Fatalf("round trip %v", d)
			}
		})
	}
}
