package benchrun

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

// findingsJSON writes the manifest's resends as analyze's JSON Lines would,
// then a summary line; edit changes each finding first.
func findingsJSON(t *testing.T, m *gencap.Manifest, edit func(i int, f map[string]any)) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i, r := range m.Resends {
		var attempts []map[string]any
		for _, id := range r.CorrelationIDs {
			attempts = append(attempts, map[string]any{"correlation_id": id})
		}
		f := map[string]any{"type": "duplicate", "client": r.Client, "broker": r.Broker, "topic": r.Topic,
			"partition": r.Partition, "verdict": r.Verdict, "appended_offsets": r.AppendedOffsets, "attempts": attempts}
		if edit != nil {
			edit(i, f)
		}
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Encode(map[string]any{"type": "summary", "findings": len(m.Resends)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCheckFindings(t *testing.T) {
	var sink bytes.Buffer
	m, err := gencap.Generate(&sink, gencap.Config{TargetBytes: 1 << 20, ResendEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Resends) < 2 {
		t.Fatalf("only %d resends generated", len(m.Resends))
	}
	for _, tc := range []struct {
		name string
		edit func(i int, f map[string]any)
		want string // error substring; empty: no error
	}{
		{"equal", nil, ""},
		{"verdict differs", func(i int, f map[string]any) {
			if i == 1 {
				f["verdict"] = "bogus"
			}
		}, "verdict bogus"},
		{"attempt missing", func(i int, f map[string]any) {
			if i == 0 {
				f["attempts"] = f["attempts"].([]map[string]any)[:1]
			}
		}, "attempts"},
		{"finding missing", func(i int, f map[string]any) {
			if i == 0 {
				clear(f)
				f["type"] = "other"
			}
		}, "findings, the manifest re-sent"},
		{"finding not in the manifest", func(i int, f map[string]any) {
			if i == 0 {
				f["partition"] = 999
			}
		}, "not in the manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFindings(findingsJSON(t, m, tc.edit), m)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	ms := []Measure{
		{File: "a.pcap", Size: 100e6, Tool: ToolReadLoop, Runs: 3, Wall: 100 * time.Millisecond, CPU: 100 * time.Millisecond, Packets: 1000, PeakRSS: 7 << 20},
		{File: "a.pcap", Size: 100e6, Tool: ToolAnalyze, Runs: 3, Wall: 200 * time.Millisecond, CPU: 250 * time.Millisecond, Packets: 1000, PeakRSS: 40 << 20},
		{File: "a.pcap", Size: 100e6, Tool: ToolTshark, Runs: 1, Wall: 6 * time.Second, CPU: 5 * time.Second, Packets: 1000, PeakRSS: 300 << 20},
	}
	var out bytes.Buffer
	if err := WriteTable(&out, ms); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"500",  // analyze MB/s
		"5000", // analyze packets/s
		"40.0 MiB",
		"a.pcap: analyze/read loop = 50% (CPU time: 40%), analyze/tshark = 30.0x (CPU time: 20.0x)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
