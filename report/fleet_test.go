package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestFleetHostLines checks what a fleet summary's host line says of its
// late and forced attempts, in the table and in JSON.
func TestFleetHostLines(t *testing.T) {
	tests := []struct {
		name      string
		host      FleetHost
		want      []string
		wantNot   []string
		jsonField string
	}{
		{
			name:    "on time",
			host:    FleetHost{Host: "b1", Attempts: 3, ConnEnds: 1, MaxLag: 15 * time.Millisecond},
			want:    []string{"host b1: 3 attempts, 1 connection end, up to 15ms behind the newest host"},
			wantNot: []string{"came later", "passed on before"},
		},
		{
			name:      "late",
			host:      FleetHost{Host: "b2", Attempts: 5, Late: 2, MaxLate: 300 * time.Millisecond},
			want:      []string{"2 came later than the 2s bound (by up to 300ms)"},
			wantNot:   []string{"passed on before"},
			jsonField: `"late":2`,
		},
		{
			name:      "forced",
			host:      FleetHost{Host: "b3", Attempts: 70000, Forced: 4464},
			want:      []string{"4464 records passed on before the bound"},
			wantNot:   []string{"came later"},
			jsonField: `"forced":4464`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Summary{Fleet: &FleetSummary{Source: "kafka://127.0.0.1:9092/a", Group: "g", Lateness: 2 * time.Second, Hosts: []FleetHost{tt.host}}}
			text := strings.Join(fleetLines(s), "\n")
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("lines lack %q:\n%s", w, text)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("lines say %q:\n%s", w, text)
				}
			}
			j, err := json.Marshal(toJSONFleet(s.Fleet))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{`"forced"`, `"late"`} {
				if want := strings.HasPrefix(tt.jsonField, f); strings.Contains(string(j), f) != want {
					t.Errorf("JSON has %s: %v, want %v: %s", f, !want, want, j)
				}
			}
			if tt.jsonField != "" && !strings.Contains(string(j), tt.jsonField) {
				t.Errorf("JSON lacks %s: %s", tt.jsonField, j)
			}
		})
	}
}
