package main

import (
	"bytes"
	"flag"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestManPage: kdupcap(1) has the sections of a man page, every flag of
// every command and every exit code, and groff renders it without a
// warning.
func TestManPage(t *testing.T) {
	cmds := commands()
	page := manPage(cmds, versionInfo{Version: "v1.2.0", Time: "2026-12-02T02:00:00Z"})
	if !strings.HasPrefix(page, `.\"`) || !strings.Contains(page, `.TH KDUPCAP 1 "2026-12-02" "kdupcap v1.2.0"`) {
		t.Errorf("no title line:\n%.300s", page)
	}
	for _, sh := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", `"KDUPCAP ANALYZE"`, `"KDUPCAP LIVE"`, `"EXIT STATUS"`, "ENVIRONMENT", `"SEE ALSO"`} {
		if !strings.Contains(page, "\n.SH "+sh+"\n") {
			t.Errorf("no section %s", sh)
		}
	}
	for _, c := range cmds {
		if c.hidden {
			continue
		}
		c.flags().VisitAll(func(f *flag.Flag) {
			if !strings.Contains(page, "\n.B "+roffName(dashed(f.Name))+"\n") && !strings.Contains(page, "\n.BI "+roffName(dashed(f.Name))+` "`) {
				t.Errorf("kdupcap %s %s not in the man page", c.name, dashed(f.Name))
			}
		})
	}
	for _, e := range exitStatuses() {
		if !strings.Contains(page, ".B "+strconv.Itoa(e.code)+"\n") {
			t.Errorf("exit status %d not in the man page", e.code)
		}
	}

	groff := testenv.Tool(t, "groff")
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("groff: %v\n%s", err, stderr.String())
	}
	cmd = exec.Command(groff, "-man", "-Tascii", "-P-c", "-P-b", "-P-u")
	cmd.Stdin = strings.NewReader(page)
	text, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--max-batches N", "-i INTERFACE", "kdupcap analyze [flags] FILE [FILE ...]", "--fail-on-duplicate"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("rendered page lacks %q:\n%s", want, text)
		}
	}
}

// TestManCommand: kdupcap man writes the page to stdout.
func TestManCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"man"}, nil, &stdout, &stderr); code != exitOK || stderr.Len() > 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), ".TH KDUPCAP 1") {
		t.Errorf("not a man page: %.200s", stdout.String())
	}
}

func TestRoffText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"re-send with --records N", `re-send with \-\-records N`},
		{"a back\\slash", `a back\eslash`},
		{".starts with a dot", `\&.starts with a dot`},
		{"(-1.5s) and =-3", `(\-1.5s) and =\-3`},
	} {
		if got := roffText(tt.in); got != tt.want {
			t.Errorf("roffText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
