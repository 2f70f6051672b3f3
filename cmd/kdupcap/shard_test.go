package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

// shardCase is one analyze command line whose output must not depend on
// --workers.
type shardCase struct {
	name  string
	args  []string // flags and files
	stdin []byte   // for "-"
}

// TestWorkersSameOutput checks that analyze writes the same bytes (stdout,
// stderr, exit code) with --workers 1 (one goroutine) as sharded over 2 and
// 3 workers, in both formats and with --records: on every capture under
// testdata (real clients, every link type capture reads), on several files
// merged, on standard input, on a truncated file, and on generated
// captures of both MTUs with a short idle timeout (connections closed by
// time across workers).
func TestWorkersSameOutput(t *testing.T) {
	var cases []shardCase
	var all []string
	for _, pattern := range []string{"../../testdata/*.pcap", "../../testdata/*.pcapng", "../../capture/testdata/*.pcap*"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			cases = append(cases, shardCase{name: filepath.Base(f), args: []string{"--sniff", "--port", "9092,9093", f}})
		}
		all = append(all, files...)
	}
	if len(all) < 10 {
		t.Fatalf("found %d captures under testdata, want the seeds, real-client and link-type captures", len(all))
	}
	cases = append(cases, shardCase{name: "all-merged", args: all})

	dir := t.TempDir()
	reqs, resps := splitByDirection(t, dir, 3*time.Second)
	cases = append(cases, shardCase{name: "two-hosts-skewed", args: []string{"--clock-skew", "2=-3s", reqs, resps}})

	seed, err := os.ReadFile(seedPath("seed-idempotent-retry.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, shardCase{name: "stdin", args: []string{"-", seedPath("seed-nonidempotent-retry.pcap")}, stdin: seed})
	cut := filepath.Join(dir, "cut.pcap")
	if err := os.WriteFile(cut, seed[:len(seed)-7], 0o644); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, shardCase{name: "truncated", args: []string{cut}})

	for _, mtu := range []int{65535, 1500} {
		path := filepath.Join(dir, fmt.Sprintf("gen-%d.pcap", mtu))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg := gencap.DefaultConfig()
		cfg.TargetBytes, cfg.MTU = 20<<20, mtu
		if _, err := gencap.Generate(f, cfg); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		cases = append(cases,
			shardCase{name: fmt.Sprintf("gencap-%d", mtu), args: []string{path}},
			shardCase{name: fmt.Sprintf("gencap-%d-idle", mtu), args: []string{"--idle-timeout", "20ms", path}})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, format := range []string{"table", "json"} {
				for _, flags := range [][]string{{"--records", "0"}, {"--records", "3"}, {"--app-duplicates"}} {
					args := append(append([]string{"analyze", "--format", format}, flags...), tc.args...)
					want := runWorkers(t, 1, args, tc.stdin)
					if want.code != exitOK && tc.name != "truncated" {
						t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), want.code, want.stderr)
					}
					for _, n := range []int{2, 3} {
						got := runWorkers(t, n, args, tc.stdin)
						if got.code != want.code || got.stdout != want.stdout || got.stderr != want.stderr {
							t.Errorf("%s --workers %d: exit %d, want %d\n%s", strings.Join(args, " "), n, got.code, want.code,
								firstDiff(got.stdout+got.stderr, want.stdout+want.stderr))
						}
					}
				}
			}
		})
	}
}

// checkSameForWorkers checks that analyze args (JSON) writes the same with
// --workers 1 and 2: for the real-traffic captures of other tests, whose
// fetches and transactions the committed captures lack.
func checkSameForWorkers(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"analyze", "--format", "json"}, args...)
	want := runWorkers(t, 1, args, nil)
	if got := runWorkers(t, 2, args, nil); got != want {
		t.Errorf("%s --workers 2 differs from 1:\n%s", strings.Join(args, " "), firstDiff(got.stdout+got.stderr, want.stdout+want.stderr))
	}
}

// workersRun is what one analyze run wrote.
type workersRun struct {
	code           int
	stdout, stderr string
}

// runWorkers runs args with --workers n.
func runWorkers(t *testing.T, n int, args []string, stdin []byte) workersRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{args[0], "--workers", fmt.Sprint(n)}, args[1:]...)
	code := run(args, bytes.NewReader(stdin), &stdout, &stderr)
	return workersRun{code, stdout.String(), stderr.String()}
}

// firstDiff shows where got and want part.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("at byte %d:\ngot:  %q\nwant: %q", i, got[from:min(len(got), i+200)], want[from:min(len(want), i+200)])
}

// TestWorkersFlag checks --workers values.
func TestWorkersFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want int
	}{
		{"1", exitOK},
		{"4", exitOK},
		{"0", exitOK},
		{"-2", exitUsage},
		{"65", exitUsage},
		{"two", exitUsage},
	} {
		var stdout, stderr bytes.Buffer
		got := run([]string{"analyze", "--workers", tc.arg, seedPath("seed-idempotent-retry.pcap")}, nil, &stdout, &stderr)
		if got != tc.want {
			t.Errorf("--workers %s: exit %d, want %d; stderr %s", tc.arg, got, tc.want, stderr.String())
		}
	}
}

// TestWriteDupsWorkers: --write-dups writes the same packets sharded as
// with one worker, the Metadata responses that named topics by ID
// (Produce v13) included: the shared state of the workers knows which
// response named a topic as one Decoder does.
func TestWriteDupsWorkers(t *testing.T) {
	for _, capFile := range []string{"kgo-v13-idempotent-timeout.pcap", "seed-nonidempotent-retry.pcap"} {
		t.Run(capFile, func(t *testing.T) {
			var files [2][]byte
			for i, workers := range []string{"1", "2"} {
				out := filepath.Join(t.TempDir(), "dups.pcap")
				var stdout, stderr bytes.Buffer
				if code := run([]string{"analyze", "--workers", workers, "--write-dups", out, "../../testdata/" + capFile}, nil, &stdout, &stderr); code != exitOK {
					t.Fatalf("--workers %s: exit %d: %s", workers, code, stderr.String())
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				files[i] = b
			}
			if len(files[0]) <= 24 {
				t.Fatalf("--write-dups wrote %d bytes: no packet", len(files[0]))
			}
			if !bytes.Equal(files[0], files[1]) {
				t.Errorf("--write-dups with 2 workers wrote %d bytes, with 1 worker %d: not the same file", len(files[1]), len(files[0]))
			}
		})
	}
}
