package benchrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

func TestRatiosTLS(t *testing.T) {
	ms := []Measure{
		{File: "eth.pcap", Size: 100e6, Tool: ToolAnalyze, Wall: 100 * time.Millisecond, CPU: 100 * time.Millisecond, MTU: 1500},
		{File: "lo.pcap", Size: 100e6, Tool: ToolAnalyze, Wall: 200 * time.Millisecond, CPU: 200 * time.Millisecond, MTU: 65535},
		{File: "tls.pcap", Size: 100e6, Tool: ToolAnalyze, Wall: 250 * time.Millisecond, CPU: 400 * time.Millisecond, MTU: 65535, TLS: true},
		{File: "slow.pcap", Size: 100e6, Tool: ToolAnalyze, Wall: time.Second, CPU: time.Second, MTU: 65535, TLS: true},
		{File: "alone.pcap", Size: 100e6, Tool: ToolAnalyze, Wall: time.Second, CPU: time.Second, MTU: 9000, TLS: true},
	}
	got := strings.Join(Ratios(ms), "\n")
	for _, want := range []string{
		"tls.pcap: decrypted analyze / plaintext analyze (lo.pcap) = 80% (CPU time: 50%), target >= 50%: target met",
		"slow.pcap: decrypted analyze / plaintext analyze (lo.pcap) = 20% (CPU time: 20%), target >= 50%: BELOW TARGET",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ratios lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "alone.pcap: decrypted") {
		t.Errorf("a TLS file with no plaintext file of its MTU got a ratio:\n%s", got)
	}
}

// TestFileTLS measures a TLS capture: analyze decrypts it with the key log
// beside it and finds the manifest's resends; without the key log the
// bench refuses it.
func TestFileTLS(t *testing.T) {
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
		Port:     9092, Runs: 1, MaxRSS: 256 << 20,
	}
	for _, secrets := range []bool{false, true} {
		path := filepath.Join(dir, "tls.pcap")
		if secrets {
			path += "ng"
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		kf, err := os.Create(gencap.KeyLogPath(path))
		if err != nil {
			t.Fatal(err)
		}
		m, err := gencap.GenerateKeyLog(f, kf, gencap.Config{TargetBytes: 1 << 20, ResendEvery: 5, TLS: true, Secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		kf.Close()
		mf, err := os.Create(gencap.ManifestPath(path))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.WriteJSON(mf); err != nil {
			t.Fatal(err)
		}
		mf.Close()
		if tshark, err := exec.LookPath("tshark"); err == nil {
			cfg.Tshark = tshark
		}
		ms, err := File(cfg, path)
		if err != nil {
			t.Fatal(err)
		}
		an := ms[2]
		if an.Tool != ToolAnalyze || !an.TLS || an.MTU != 65535 || len(m.Resends) == 0 {
			t.Fatalf("analyze measure %+v, %d resends", an, len(m.Resends))
		}
		wantNote := "findings = manifest, decrypted (--tls-keylog tls.pcap.keys)"
		if secrets {
			wantNote = "findings = manifest, decrypted"
		}
		if !strings.HasSuffix(an.Note, wantNote) {
			t.Errorf("secrets %v: analyze note %q, want one ending %q", secrets, an.Note, wantNote)
		}
		if cfg.Tshark != "" {
			// tshark decrypts with the same keys and lists the produce
			// requests (4.0 may leave out v9 and later).
			if len(ms) != 4 || !strings.HasPrefix(ms[3].Note, "listed ") || strings.HasPrefix(ms[3].Note, "listed 0 ") {
				t.Errorf("secrets %v: tshark measure %+v", secrets, ms[len(ms)-1])
			}
		}
	}
	if err := os.Remove(gencap.KeyLogPath(filepath.Join(dir, "tls.pcap"))); err != nil {
		t.Fatal(err)
	}
	if _, err := File(cfg, filepath.Join(dir, "tls.pcap")); err == nil || !strings.Contains(err.Error(), "key log") {
		t.Errorf("a TLS capture without its key log: error %v", err)
	}
}
