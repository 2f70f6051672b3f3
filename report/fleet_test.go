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
		name          string
		host          FleetHost
		want, wantNot []string // in the table's host line
		json, noJSON  []string // in the JSON host
	}{
		{
			name:    "on time",
			host:    FleetHost{Host: "b1", Attempts: 3, ConnEnds: 1, MaxLag: 15 * time.Millisecond},
			want:    []string{"host b1: 3 attempts, 1 connection end, up to 15ms behind the newest host"},
			wantNot: []string{"came later", "passed on before"},
			noJSON:  []string{`"late"`, `"forced"`},
		},
		{
			name:    "late",
			host:    FleetHost{Host: "b2", Attempts: 5, Late: 2, MaxLate: 300 * time.Millisecond},
			want:    []string{"2 came later than the 2s bound (by up to 300ms)"},
			wantNot: []string{"passed on before"},
			json:    []string{`"late":2`},
			noJSON:  []string{`"forced"`},
		},
		{
			name:    "forced",
			host:    FleetHost{Host: "b3", Attempts: 70000, Forced: 4464},
			want:    []string{"4464 records passed on before the bound"},
			wantNot: []string{"came later"},
			json:    []string{`"forced":4464`},
			noJSON:  []string{`"late"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Summary{Fleet: &FleetSummary{Source: "kafka://127.0.0.1:9092/a", Group: "g", Lateness: 2 * time.Second, Hosts: []FleetHost{tt.host}}}
			checkSays(t, "lines", strings.Join(fleetLines(s), "\n"), tt.want, tt.wantNot)
			j, err := json.Marshal(toJSONFleet(s.Fleet))
			if err != nil {
				t.Fatal(err)
			}
			checkSays(t, "JSON", string(j), tt.json, tt.noJSON)
		})
	}
}

// checkSays checks that text (what it is) says each of says and none of
// not.
func checkSays(t *testing.T, what, text string, says, not []string) {
	t.Helper()
	for _, w := range says {
		if !strings.Contains(text, w) {
			t.Errorf("%s without %q:\n%s", what, w, text)
		}
	}
	for _, w := range not {
		if strings.Contains(text, w) {
			t.Errorf("%s with %q:\n%s", what, w, text)
		}
	}
}
