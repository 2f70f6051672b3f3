package pipeline

import (
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

// TestCrossesDrop: a finding says so when the kernel was seen dropping
// packets while its attempts and answers were on the wire.
func TestCrossesDrop(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := detect.Finding{Attempts: []detect.Attempt{
		{Time: t0, Response: &detect.Response{Time: t0.Add(300 * time.Millisecond)}},
		{Time: t0.Add(400 * time.Millisecond), Response: &detect.Response{Time: t0.Add(410 * time.Millisecond)}},
	}}
	tests := []struct {
		name  string
		drops []time.Time
		want  bool
	}{
		{"no drop", nil, false},
		{"drop before the first attempt", []time.Time{t0.Add(-time.Second)}, false},
		{"drop between the attempts", []time.Time{t0.Add(350 * time.Millisecond)}, true},
		{"drop seen just after the last answer", []time.Time{t0.Add(500 * time.Millisecond)}, true},
		{"drop long after", []time.Time{t0.Add(5 * time.Second)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &Live{dropTimes: tc.drops}
			if got := l.crossesDrop(&f); got != tc.want {
				t.Errorf("crossesDrop = %v, want %v", got, tc.want)
			}
		})
	}
}
