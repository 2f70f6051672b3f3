package report

import (
	"io"
	"testing"

	"github.com/kdupcap/kdupcap/profile"
)

// timelineWriter is a Writer that draws a timeline.
type timelineWriter struct{ Writer }

func (timelineWriter) Timeline(*profile.Timeline) error { return nil }

// TestDrawsTimeline: a Multi draws a timeline only when one of its writers
// does, although the Multi itself always has the method.
func TestDrawsTimeline(t *testing.T) {
	tw := timelineWriter{NewJSON(io.Discard)}
	tests := []struct {
		name string
		w    Writer
		want bool
	}{
		{"json", NewJSON(io.Discard), false},
		{"drawer", tw, true},
		{"multi without", Multi(NewJSON(io.Discard), NewTable(io.Discard)), false},
		{"multi with", Multi(NewTable(io.Discard), tw), true},
		{"nested", Multi(NewTable(io.Discard), Multi(NewLines(io.Discard), tw)), true},
	}
	for _, tt := range tests {
		if got := DrawsTimeline(tt.w); got != tt.want {
			t.Errorf("%s: DrawsTimeline %v, want %v", tt.name, got, tt.want)
		}
	}
}
