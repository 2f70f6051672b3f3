package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the .golden files of testdata captures")

// captureFiles lists every capture under testdata: each is a golden subtest,
// so adding a capture adds a test.
func captureFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.pcap", "*.pcapng", "*.pcap.gz", "*.pcap.zst", "*.pcapng.gz", "*.pcapng.zst"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no captures under testdata: the seed captures must be there")
	}
	return files
}

// TestGolden runs analyze on every testdata capture in both formats and
// compares with NAME.table.golden and NAME.json.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	for _, file := range captureFiles(t) {
		for _, format := range []string{"table", "json"} {
			name := filepath.Base(file) + "/" + format
			t.Run(name, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run([]string{"analyze", "--format", format, file}, nil, &stdout, &stderr)
				if code != exitOK {
					t.Fatalf("exit %d, stderr: %s", code, stderr.String())
				}
				golden := strings.TrimSuffix(file, filepath.Ext(file)) + "." + format + ".golden"
				if *update {
					if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd/kdupcap -run TestGolden -update)", err)
				}
				if !bytes.Equal(stdout.Bytes(), want) {
					t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", golden, stdout.String(), want)
				}
			})
		}
	}
}
