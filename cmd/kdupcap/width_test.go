package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// widthCaptures are the testdata captures whose tables are widest: record
// findings with a BATCH column, records, several producers.
var widthCaptures = []string{"rdkafka211-idempotent-epoch-bump.pcap", "sarama-nonidempotent-rebatched.pcap",
	"kafkago-gzip-nonidempotent-rebuilt.pcap", "seed-idempotent-retry.pcap"}

// longestLine is the widest line of out, in runes (every rune kdupcap
// prints takes one column), and the line.
func longestLine(out string) (int, string) {
	n, which := 0, ""
	for l := range strings.SplitSeq(out, "\n") {
		l = strings.TrimRight(l, " ")
		if w := utf8.RuneCountInString(l); w > n {
			n, which = w, l
		}
	}
	return n, which
}

// TestTableWidthColumns: with COLUMNS set (stdout not a terminal), no line
// of the table is wider, whatever the findings; without it, lines are
// as wide as they come (TestGolden holds them).
func TestTableWidthColumns(t *testing.T) {
	var files []string
	for _, c := range widthCaptures {
		files = append(files, seedPath(c))
	}
	for _, width := range []int{40, 60, 80, 120, 200} {
		for _, extra := range [][]string{nil, {"--all", "--records", "5"}} {
			t.Run(fmt.Sprintf("%d%v", width, extra), func(t *testing.T) {
				t.Setenv("COLUMNS", strconv.Itoa(width))
				out := tableRun(t, append(extra, files...)...)
				if n, l := longestLine(out); n > width {
					t.Errorf("a line of %d columns, wider than %d: %q", n, width, l)
				}
				if !strings.Contains(out, "Topics") || !strings.Contains(out, "The log holds") {
					t.Errorf("output cut short:\n%s", out)
				}
			})
		}
	}
	t.Setenv("COLUMNS", "")
	if n, _ := longestLine(tableRun(t, files...)); n <= 200 {
		t.Errorf("without COLUMNS the widest line is %d columns: the table was fitted to a width", n)
	}
}

// TestTableWidthTmux runs `kdupcap analyze` (this test binary, re-executed)
// in a tmux pane 80 and 200 columns wide, without COLUMNS, so that the
// width comes from the terminal, and reads the pane back with its wrapped
// lines joined: no line is wider than the pane.
func TestTableWidthTmux(t *testing.T) {
	if args := os.Getenv("KDUPCAP_TMUX_ARGS"); args != "" {
		os.Exit(run(strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
	}
	tmux := testenv.Tool(t, "tmux")
	var files []string
	for _, c := range widthCaptures {
		abs, err := filepath.Abs(seedPath(c))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, abs)
	}
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 200} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "tmux.sock")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tm := func(args ...string) (string, error) {
				cmd := exec.CommandContext(ctx, tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
				var out, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &stderr
				if err := cmd.Run(); err != nil {
					return out.String(), fmt.Errorf("tmux %v: %v: %s", args, err, stderr.String())
				}
				return out.String(), nil
			}
			t.Cleanup(func() { tm("kill-server") })
			// The pane runs analyze, says it is done, and stays open to be
			// read.
			script := fmt.Sprintf("env -u COLUMNS KDUPCAP_TMUX_ARGS=%s %s -test.run='^TestTableWidthTmux$'; %s -S %s wait-for -S done; sleep 60",
				shellQuote("analyze --all "+strings.Join(files, " ")), shellQuote(self), shellQuote(tmux), shellQuote(sock))
			if _, err := tm("start-server", ";", "set-option", "-g", "history-limit", "50000", ";",
				"new-session", "-d", "-s", "k", "-x", strconv.Itoa(width), "-y", "50", "-c", dir, script); err != nil {
				t.Fatal(err)
			}
			if _, err := tm("wait-for", "done"); err != nil {
				t.Fatal(err)
			}
			out, err := tm("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "k")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "The log holds") || !strings.Contains(out, "Topics") {
				t.Fatalf("the pane does not hold the table:\n%s", out)
			}
			n, l := longestLine(out)
			if n > width {
				t.Errorf("a line of %d columns in a pane of %d: %q", n, width, l)
			}
			// The terminal's width was used: at 200 columns some line is
			// wider than 80 (the findings' attempts tables are), and none
			// is cut or wrapped as at 80.
			if width == 200 && n <= 80 {
				t.Errorf("the widest line at 200 columns is %d: the terminal's width was not used", n)
			}
			t.Logf("%d lines, the widest %d columns", strings.Count(out, "\n"), n)
		})
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
