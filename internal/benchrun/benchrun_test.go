package benchrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestFile runs the real read loop and kdupcap (built here) on a small
// generated capture: both measured, analyze checked against the manifest,
// and a wrong manifest fails the bench.
func TestFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two commands")
	}
	dir := t.TempDir()
	bin := func(pkg string) string {
		out := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", out, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v: %s", pkg, err, b)
		}
		return out
	}
	cfg := Config{
		ReadLoop: bin("github.com/kdupcap/kdupcap/internal/benchrun/cmd/readloop"),
		Kdupcap:  bin("github.com/kdupcap/kdupcap/cmd/kdupcap"),
		Port:     9092, Runs: 2, MaxRSS: 256 << 20,
	}
	path := filepath.Join(dir, "gen.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := gencap.Generate(f, gencap.Config{TargetBytes: 1 << 20, MTU: 1500, ResendEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeManifest := func(m *gencap.Manifest) {
		mf, err := os.Create(gencap.ManifestPath(path))
		if err != nil {
			t.Fatal(err)
		}
		defer mf.Close()
		if err := m.WriteJSON(mf); err != nil {
			t.Fatal(err)
		}
	}
	writeManifest(m)
	ms, err := File(cfg, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].Tool != ToolReadLoop || ms[1].Tool != ToolReadLoopZeroCopy || ms[2].Tool != ToolAnalyze {
		t.Fatalf("measures %+v", ms)
	}
	// File itself fails when a read loop's packet count or analyze's
	// findings differ from the manifest; here, what it measured.
	for _, x := range ms {
		if x.Wall <= 0 || x.PeakRSS <= 0 || x.Runs != 2 {
			t.Errorf("%s: %+v", x.Tool, x)
		}
	}
	if want := fmt.Sprintf("%d findings = manifest", len(m.Resends)); ms[2].Note != want {
		t.Errorf("analyze note %q, want %q", ms[2].Note, want)
	}

	// On a capture of real clients, with one worker: also two one-worker
	// runs at once, measured together.
	m.Source = "TestFile"
	writeManifest(m)
	one := cfg
	one.OneWorker = true
	ms, err = File(one, path)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, x := range ms {
		tools = append(tools, x.Tool)
	}
	if want := []string{ToolReadLoop, ToolReadLoopZeroCopy, ToolAnalyzeOne, ToolAnalyzeOnePair, ToolAnalyze}; !slices.Equal(tools, want) {
		t.Fatalf("tools %q, want %q", tools, want)
	}
	if p, o := ms[3], ms[2]; p.Size != 2*o.Size || p.Packets != 2*o.Packets || p.Wall <= 0 || p.CPU <= 0 || p.Note != o.Note {
		t.Errorf("pair %+v, one %+v", p, o)
	}

	m.Source = ""
	m.Resends[0].Verdict = "bogus"
	writeManifest(m)
	if _, err := File(cfg, path); err == nil || !strings.Contains(err.Error(), "differs from the manifest") {
		t.Errorf("a wrong manifest: error %v", err)
	}
}

// TestRatiosTargets: on a capture of real clients the line ends with the
// issue's targets for its MTU, met or not; a compressed capture's line is
// analyze against its decompressor; tshark's ratio has no target.
func TestRatiosTargets(t *testing.T) {
	ms := []Measure{
		{File: "lo.pcap", Size: 1e9, Tool: ToolReadLoop, Wall: time.Second, CPU: time.Second, MTU: 65535, Real: true},
		{File: "lo.pcap", Size: 1e9, Tool: ToolReadLoopZeroCopy, Wall: time.Second / 4, CPU: time.Second / 4, MTU: 65535, Real: true},
		{File: "lo.pcap", Size: 1e9, Tool: ToolAnalyzeOne, Wall: time.Second, CPU: time.Second, MTU: 65535, Real: true},
		{File: "lo.pcap", Size: 1e9, Tool: ToolAnalyze, Wall: time.Second / 2, CPU: time.Second, MTU: 65535, Real: true},
		{File: "eth.pcap", Size: 1e9, Tool: ToolReadLoop, Wall: time.Second, CPU: time.Second, MTU: 1500, Real: true},
		{File: "eth.pcap", Size: 1e9, Tool: ToolAnalyzeOne, Wall: 2 * time.Second, CPU: 2 * time.Second, MTU: 1500, Real: true},
		{File: "eth.pcap", Size: 2e9, Tool: ToolAnalyzeOnePair, Wall: 2500 * time.Millisecond, CPU: 4400 * time.Millisecond, MTU: 1500, Real: true},
		{File: "eth.pcap", Size: 1e9, Tool: ToolAnalyze, Wall: 1500 * time.Millisecond, CPU: 2 * time.Second, MTU: 1500, Real: true},
		{File: "lo.pcap.zst", Size: 1e8, Tool: ToolZstd, Wall: time.Second, CPU: time.Second, Codec: "zst", Real: true},
		{File: "lo.pcap.zst", Size: 1e8, Tool: ToolAnalyze, Wall: 1100 * time.Millisecond, CPU: 2 * time.Second, Codec: "zst", Real: true},
		{File: "gen.pcap", Size: 1e9, Tool: ToolReadLoop, Wall: time.Second, CPU: time.Second, MTU: 65535},
		{File: "gen.pcap", Size: 1e9, Tool: ToolAnalyze, Wall: 2 * time.Second, CPU: 2 * time.Second, MTU: 65535},
		{File: "gen.pcap", Size: 1e9, Tool: ToolTshark, Wall: 21 * time.Second, CPU: 10 * time.Second, MTU: 65535},
	}
	got := Ratios(ms)
	want := []string{
		"lo.pcap: analyze/read loop = 200% (CPU time: 100%), analyze/read loop, zero-copy = 50% (CPU time: 25%), analyze/analyze --workers 1 = 2.00x (CPU time: 1.00x); " +
			"targets: analyze/read loop >= 1.00x met, analyze/read loop, zero-copy >= 0.30x met, analyze/analyze --workers 1 >= 1.00x met",
		"eth.pcap: analyze/read loop = 67% (CPU time: 50%), analyze/analyze --workers 1 = 1.33x (CPU time: 1.00x), two one-worker runs at once / one = 1.60x (CPU time: 0.91x); " +
			"targets: analyze/read loop >= 0.80x BELOW, analyze/analyze --workers 1 >= 1.60x BELOW",
		"lo.pcap.zst: analyze/zstd -dc = 91% (CPU time: 50%); targets: analyze/zstd -dc >= 0.80x met",
		"gen.pcap: analyze/read loop = 50% (CPU time: 50%), analyze/tshark = 10.5x (CPU time: 5.0x)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ratios:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCodecOf: a compressed capture is known by its suffix, its manifest
// by the capture it compresses.
func TestCodecOf(t *testing.T) {
	for _, tc := range []struct{ path, codec, plain string }{
		{"d/real-lo.pcap.zst", "zst", "d/real-lo.pcap"},
		{"d/real-lo.pcap.gz", "gz", "d/real-lo.pcap"},
		{"d/real-lo.pcap", "", "d/real-lo.pcap"},
	} {
		if c, p := codecOf(tc.path); c != tc.codec || p != tc.plain {
			t.Errorf("codecOf(%q) = %q, %q; want %q, %q", tc.path, c, p, tc.codec, tc.plain)
		}
	}
}
