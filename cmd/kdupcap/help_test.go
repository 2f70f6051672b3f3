package main

import (
	"bytes"
	"flag"
	"strconv"
	"strings"
	"testing"
)

// TestHelp: -h, --help and help go to stdout with exit 0 for every command,
// list every flag the command parses with its default, and fit the width.
func TestHelp(t *testing.T) {
	cmds := commands()
	tests := []struct {
		args    []string
		command string // whose flags are listed; "" for kdupcap's own help
	}{
		{[]string{"--help"}, ""},
		{[]string{"-h"}, ""},
		{[]string{"help"}, ""},
		{[]string{"analyze", "--help"}, "analyze"},
		{[]string{"analyze", "-h"}, "analyze"},
		{[]string{"analyze", "x.pcap", "--quiet", "--help"}, "analyze"},
		{[]string{"help", "analyze"}, "analyze"},
		{[]string{"live", "--help"}, "live"},
		{[]string{"live", "-i", "lo", "-h"}, "live"},
		{[]string{"help", "live"}, "live"},
		{[]string{"version", "--help"}, "version"},
		{[]string{"completion", "--help"}, "completion"},
		{[]string{"help", "--help"}, "help"},
		{[]string{"man", "--help"}, "man"},
	}
	for _, width := range []int{40, 80, 100} {
		t.Setenv("COLUMNS", strconv.Itoa(width))
		for _, tt := range tests {
			t.Run(strconv.Itoa(width)+"/"+strings.Join(tt.args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := run(tt.args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
					t.Errorf("exit %d, want 0", code)
				}
				if stderr.Len() > 0 {
					t.Errorf("stderr %q, want nothing", stderr.String())
				}
				out := stdout.String()
				for _, line := range strings.Split(out, "\n") {
					if columns(line) >= width && strings.Contains(strings.TrimSpace(line), " ") {
						t.Errorf("line of %d columns, over %d: %q", columns(line), width-1, line)
					}
				}
				if tt.command == "" {
					for _, c := range cmds {
						if !c.hidden && !strings.Contains(out, "kdupcap "+c.name) {
							t.Errorf("command %s not listed:\n%s", c.name, out)
						}
					}
					return
				}
				c, _ := lookup(cmds, tt.command)
				if !strings.HasPrefix(out, "Usage: kdupcap "+c.name) {
					t.Errorf("help does not start with its usage line:\n%s", out)
				}
				c.flags().VisitAll(func(f *flag.Flag) {
					if !strings.Contains(out, "\n  "+dashed(f.Name)) {
						t.Errorf("flag %s not listed:\n%s", dashed(f.Name), out)
					}
				})
			})
		}
	}
}

// TestHelpDefaults: the help says the defaults that are not zero.
func TestHelpDefaults(t *testing.T) {
	t.Setenv("COLUMNS", "1000") // one line per flag's usage: maxWidth still bounds it
	var stdout bytes.Buffer
	run([]string{"analyze", "--help"}, nil, &stdout, &bytes.Buffer{})
	out := strings.Join(strings.Fields(stdout.String()), " ")
	for _, want := range []string{
		"--format table|json|lines|html output format: table, json (JSON Lines), lines (one line per finding, as live prints) or html (the page of --html, to standard output) (default table)",
		`--port PORTS comma-separated broker PORTS taken as Kafka (default "9092")`,
		"--window DURATION",
		"(default 10m0s)",
		"--max-batches N",
		"(default 65536)",
		"--sniff also take connections on other ports whose bytes parse as Kafka requests (default true)",
		"--verdict LIST",
		"-h, --help show this help",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(out, "(default false)") || strings.Contains(out, "(default 0)") {
		t.Errorf("help shows a zero default:\n%s", stdout.String())
	}
}

func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		text   string
		width  int
		indent string
		want   string
	}{
		{"one two three four", 9, "", "one two\nthree\nfour\n"},
		{"one two three", 11, "  ", "  one two\n  three\n"},
		{"unbreakable-word here", 5, "", "unbreakable-word\nhere\n"},
		{"para one\ncontinued\n\npara two", 80, "", "para one continued\n\npara two\n"},
		{"intro:\n\n  kdupcap  completion bash\n\nend", 30, "", "intro:\n\n  kdupcap  completion bash\n\nend\n"},
		{"  kdupcap completion bash > /a/long/path", 20, "", "  kdupcap completion\n      bash >\n      /a/long/path\n"},
	} {
		if got := wrap(tt.text, tt.width, tt.indent); got != tt.want {
			t.Errorf("wrap(%q, %d) =\n%q, want\n%q", tt.text, tt.width, got, tt.want)
		}
	}
}

func TestHelpWidth(t *testing.T) {
	for _, tt := range []struct {
		columns string
		want    int
	}{
		{"", defaultWidth}, {"x", defaultWidth}, {"-3", defaultWidth},
		{"60", 60}, {"10", minWidth}, {"500", maxWidth},
	} {
		t.Setenv("COLUMNS", tt.columns)
		if got := helpWidth(nil); got != tt.want {
			t.Errorf("COLUMNS=%q: width %d, want %d", tt.columns, got, tt.want)
		}
	}
}
