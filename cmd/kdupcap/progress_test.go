package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/gencap"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
)

// TestProgressBar draws the bar, forced on, into a buffer standing for the
// terminal, on a real analyze run of a generated capture: it shows bytes
// of total, a rate, the findings and re-sends so far, and is cleared at the
// end. The bar never writes to stdout.
func TestProgressBar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := gencap.Generate(f, gencap.Config{TargetBytes: 2 << 20, ResendEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	total := pipeline.Inputs{Files: []string{path}}.Size()
	if st, _ := os.Stat(path); total != st.Size() {
		t.Fatalf("Inputs.Size %d, file %d bytes", total, st.Size())
	}

	var term bytes.Buffer
	an := pipeline.NewAnalysis(pipeline.Options{Sniff: true, Workers: 1})
	bar := report.NewProgress(&term, total, 0, an.Stats) // redrawn on every call
	var calls int
	var last int64
	onRead := func(r pipeline.Read) {
		calls++
		if r.Input < last {
			t.Errorf("input bytes went back from %d to %d", last, r.Input)
		}
		if r.Capture > r.Input {
			t.Errorf("capture bytes %d beyond input bytes %d: the file is not compressed", r.Capture, r.Input)
		}
		last = r.Input
		bar.Update(r.Input, r.Capture)
	}
	if errs := an.Read(pipeline.Inputs{Files: []string{path}}, onRead); len(errs) > 0 {
		t.Fatal(errs)
	}
	bar.Finish()
	findings := an.Finish()
	if len(findings) != len(m.Resends) || len(findings) == 0 {
		t.Fatalf("%d findings, manifest %d", len(findings), len(m.Resends))
	}
	if last != total || calls < 2 {
		t.Errorf("onRead: %d calls, last %d bytes, want the file's %d", calls, last, total)
	}
	out := term.String()
	// Reaching the total ends the bar, which clears it instead of drawing
	// 100%.
	for _, want := range []string{"%", "MB/s", "re-sends", "findings", fmt.Sprintf("/%.1f MB", float64(total)/1e6)} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output lacks %q:\n%q", want, out)
		}
	}
	// Cleared: the last thing written is a carriage return after blanks.
	if !strings.HasSuffix(out, "\r") {
		t.Errorf("bar not cleared at the end: %q", out[max(0, len(out)-80):])
	}
}

// TestProgressSilent: no bar when stderr is not a terminal (a buffer, a
// pipe, a file, /dev/null) or with --quiet on one, and a nil bar is safe to
// use.
func TestProgressSilent(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for name, stderr := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "pipe": w, "file": file, "/dev/null": null} {
		if isTerminal(stderr) {
			t.Errorf("%s taken for a terminal", name)
		}
	}
	var bar *report.Progress // what analyze has when there is no bar
	bar.Update(50, 50)       // nil-safe
	bar.Finish()
	if got := (pipeline.Inputs{Files: []string{"-"}}).Size(); got != -1 {
		t.Errorf("Inputs.Size of stdin = %d, want -1", got)
	}
}

// TestAnalyzeQuiet: --quiet is accepted and stderr stays empty on a clean
// run, as it does without it when stderr is not a terminal.
func TestAnalyzeQuiet(t *testing.T) {
	for _, args := range [][]string{
		{"analyze", "--quiet", "../../testdata/seed-idempotent-retry.pcap"},
		{"analyze", "../../testdata/seed-idempotent-retry.pcap"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
		if stdout.Len() == 0 {
			t.Errorf("%v: no output", args)
		}
	}
}
