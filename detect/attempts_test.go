package detect

import (
	"strings"
	"testing"
)

// TestMaxAttempts: a batch re-sent without end keeps MaxAttempts attempts and
// counts the rest; the cost of each further re-send stays bounded.
func TestMaxAttempts(t *testing.T) {
	tests := []struct {
		name     string
		sends    int
		kept     int
		omitted  int
		inReason bool
	}{
		{"below the cap", 10, 10, 0, false},
		{"at the cap", MaxAttempts, MaxAttempts, 0, false},
		{"beyond the cap", 3 * MaxAttempts, MaxAttempts, 2 * MaxAttempts, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := New(Options{})
			for i := range tc.sends {
				// Each attempt answered REQUEST_TIMED_OUT at its own offset.
				d.Produce(ex(conn1, int32(i+1), float64(10*i), float64(10*i+5), 7, int64(i), plain(1)))
			}
			fs := d.Flush()
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1", len(fs))
			}
			f := fs[0]
			if len(f.Attempts) != tc.kept || f.AttemptsOmitted != tc.omitted {
				t.Errorf("attempts %d kept, %d omitted; want %d, %d", len(f.Attempts), f.AttemptsOmitted, tc.kept, tc.omitted)
			}
			if got := strings.Contains(f.Reason, "not kept"); got != tc.inReason {
				t.Errorf("reason %q", f.Reason)
			}
			if st := d.Stats(); st.Resends != int64(tc.sends-1) {
				t.Errorf("resends %d, want %d", st.Resends, tc.sends-1)
			}
		})
	}
}
