package main

import (
	"bytes"
	"flag"
	"io"
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
// compares with NAME.table.golden and NAME.json.golden; -update rewrites them
// (from the default run). The same output is wanted with one worker and two
// (the sharded run), and with the capture read from standard input.
func TestGolden(t *testing.T) {
	variants := []struct {
		name  string
		args  []string
		stdin bool
	}{
		{"default", nil, false},
		{"workers=1", []string{"--workers", "1"}, false},
		{"workers=2", []string{"--workers", "2"}, false},
		{"stdin", nil, true},
	}
	for _, file := range captureFiles(t) {
		for _, format := range []string{"table", "json"} {
			for _, v := range variants {
				// The table's summary names the input "-" in a column
				// as wide as the name: stdin is checked in JSON.
				if *update && v.name != "default" || v.stdin && format != "json" {
					continue
				}
				name := filepath.Base(file) + "/" + format + "/" + v.name
				t.Run(name, func(t *testing.T) {
					goldenRun(t, file, format, v.args, v.stdin)
				})
			}
		}
	}
}

// goldenRun is one subtest of TestGolden.
func goldenRun(t *testing.T, file, format string, extra []string, stdin bool) {
	args := append([]string{"analyze", "--format", format}, extra...)
	var in io.Reader
	if stdin {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		in = f
		args = append(args, "-")
	} else {
		args = append(args, file)
	}
	var stdout, stderr bytes.Buffer
	code := run(args, in, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	golden := strings.TrimSuffix(file, filepath.Ext(file)) + "." + format + ".golden"
	if stdin {
		// The summary names the input "-", not the file.
		stdout = *bytes.NewBuffer(bytes.ReplaceAll(stdout.Bytes(), []byte(`"files":["-"]`), []byte(`"files":["`+file+`"]`)))
	}
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
}
