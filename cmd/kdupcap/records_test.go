package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordsGolden runs analyze --records 5 on the non-idempotent seed
// capture, whose one record is "this is duplicated message 9", in both
// formats and compares with testdata/NAME.records5.FORMAT.golden; -update
// rewrites them. The goldens of TestGolden (no --records) stay as they are.
func TestRecordsGolden(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "seed-nonidempotent-retry.pcap")
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"analyze", "--records", "5", "--format", format, file}, nil, &stdout, &stderr)
			if code != exitOK {
				t.Fatalf("exit %d, stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "this is duplicated message 9") {
				t.Errorf("the record's value is not shown:\n%s", stdout.String())
			}
			golden := filepath.Join("testdata", "seed-nonidempotent-retry.records5."+format+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/kdupcap -run TestRecordsGolden -update)", err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", golden, stdout.String(), want)
			}
		})
	}
}

func TestRecordsFlag(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "seed-nonidempotent-retry.pcap")
	for _, n := range []string{"-1", "1001", "x"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"analyze", "--records", n, file}, nil, &stdout, &stderr); code == exitOK {
			t.Errorf("analyze --records %s accepted", n)
		}
		if _, err := parseLiveFlags([]string{"-i", "lo", "--records", n}, &stderr, false); err == nil {
			t.Errorf("live --records %s accepted", n)
		}
	}
	cfg, err := parseLiveFlags([]string{"-i", "lo", "--records", "3"}, &bytes.Buffer{}, false)
	if err != nil || cfg.opts.Records != 3 {
		t.Errorf("live --records 3: %+v, %v", cfg, err)
	}
}
