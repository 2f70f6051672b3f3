package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFlagErrors: a bad flag, value or command is one line on stderr that
// names the command and the flag and says where the help is, nothing on
// stdout, exit 2; numeric flags are range-checked as they are parsed.
func TestFlagErrors(t *testing.T) {
	const file = "no-such.pcap" // never read: the flags fail first
	tests := []struct {
		args []string
		want string
	}{
		// analyze: unknown flag, bad value, missing value, out of range.
		{[]string{"analyze", "--bogus", file}, "kdupcap analyze: unknown flag --bogus; see kdupcap analyze --help"},
		{[]string{"analyze", file, "-bogus"}, "kdupcap analyze: unknown flag --bogus; see kdupcap analyze --help"},
		{[]string{"analyze", "--fail-on-duplicates", file}, "kdupcap analyze: unknown flag --fail-on-duplicates (did you mean --fail-on-duplicate?); see kdupcap analyze --help"},
		{[]string{"analyze", "--max-batches", "-5", file}, "kdupcap analyze: --max-batches -5: want 1 or more; see kdupcap analyze --help"},
		{[]string{"analyze", "--max-batches", "0", file}, "kdupcap analyze: --max-batches 0: want 1 or more; see kdupcap analyze --help"},
		{[]string{"analyze", "--max-batches", "many", file}, "kdupcap analyze: --max-batches many: want a whole number; see kdupcap analyze --help"},
		{[]string{"analyze", "--max-connections=0", file}, "kdupcap analyze: --max-connections 0: want 1 or more; see kdupcap analyze --help"},
		{[]string{"analyze", "--records", "-1", file}, "kdupcap analyze: --records -1: want 0 to 1000; see kdupcap analyze --help"},
		{[]string{"analyze", "--records", "1001", file}, "kdupcap analyze: --records 1001: want 0 to 1000; see kdupcap analyze --help"},
		{[]string{"analyze", "--workers", "65", file}, "kdupcap analyze: --workers 65: want 0 to 64; see kdupcap analyze --help"},
		{[]string{"analyze", "--workers", "-1", file}, "kdupcap analyze: --workers -1: want 0 to 64; see kdupcap analyze --help"},
		{[]string{"analyze", "--window", "-1s", file}, "kdupcap analyze: --window -1s: want a positive duration; see kdupcap analyze --help"},
		{[]string{"analyze", "--window", "0", file}, "kdupcap analyze: --window 0: want a positive duration; see kdupcap analyze --help"},
		{[]string{"analyze", "--idle-timeout", "soon", file}, "kdupcap analyze: --idle-timeout soon: want a duration such as 500ms, 30s or 10m; see kdupcap analyze --help"},
		{[]string{"analyze", "--reorder-window", "-1ms", file}, "kdupcap analyze: --reorder-window -1ms: must not be negative; see kdupcap analyze --help"},
		{[]string{"analyze", "--reorder-window", "x", file}, "kdupcap analyze: --reorder-window x: want a duration such as 10ms, or 0; see kdupcap analyze --help"},
		{[]string{"analyze", "--decompress-budget", "0", file}, "kdupcap analyze: --decompress-budget 0: want a positive number; see kdupcap analyze --help"},
		{[]string{"analyze", "--decompress-budget", "NaN", file}, "kdupcap analyze: --decompress-budget NaN: want a positive number; see kdupcap analyze --help"},
		{[]string{"analyze", "--max-frame-bytes", "0", file}, "kdupcap analyze: --max-frame-bytes 0: want a size from 1 to 100MiB; see kdupcap analyze --help"},
		{[]string{"analyze", "--max-input-bytes", "lots", file}, "kdupcap analyze: --max-input-bytes lots: want a size such as 500MB or 2GiB; see kdupcap analyze --help"},
		{[]string{"analyze", "--format", "xml", file}, "kdupcap analyze: --format xml: want table, json, lines or html; see kdupcap analyze --help"},
		{[]string{"analyze", "--scope", "clients", file}, "kdupcap analyze: --scope clients: want connection, client or both; see kdupcap analyze --help"},
		{[]string{"analyze", "--sniff=maybe", file}, "kdupcap analyze: --sniff=maybe: want true or false; see kdupcap analyze --help"},
		{[]string{"analyze", "--tls-keylog", "", file}, `kdupcap analyze: --tls-keylog "": empty file name; see kdupcap analyze --help`},
		{[]string{"analyze", file, "--window"}, "kdupcap analyze: flag --window needs a value; see kdupcap analyze --help"},
		{[]string{"analyze", "---x", file}, "kdupcap analyze: bad flag syntax ---x; see kdupcap analyze --help"},
		{[]string{"analyze"}, "kdupcap analyze: no capture file given; see kdupcap analyze --help"},

		// live: the same, and its own numbers.
		{[]string{"live", "-i", "lo", "--bogus"}, "kdupcap live: unknown flag --bogus; see kdupcap live --help"},
		{[]string{"live", "-i"}, "kdupcap live: flag -i needs a value; see kdupcap live --help"},
		{[]string{"live"}, "kdupcap live: -i INTERFACE is required; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--max-batches", "-5"}, "kdupcap live: --max-batches -5: want 1 or more; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--snaplen", "0"}, "kdupcap live: --snaplen 0: want 1 to 262144; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--snaplen", "262145"}, "kdupcap live: --snaplen 262145: want 1 to 262144; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--ring-mb", "0"}, "kdupcap live: --ring-mb 0: want 1 to 4096; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--count", "-1"}, "kdupcap live: --count -1: want 0 or more; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--duration", "-1s"}, "kdupcap live: --duration -1s: want 0s or more; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--stats-every", "-1s"}, "kdupcap live: --stats-every -1s: want 0s or more; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--settle", "0s"}, "kdupcap live: --settle 0s: want a positive duration; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "--format", "table"}, "kdupcap live: --format table: want lines or json; see kdupcap live --help"},
		{[]string{"live", "-i", "lo", "eth0"}, "kdupcap live: unexpected argument eth0 (live reads an interface, not files: see kdupcap analyze); see kdupcap live --help"},

		// The other commands, and kdupcap's own.
		{[]string{"frobnicate"}, "kdupcap: unknown command frobnicate; see kdupcap --help"},
		{[]string{"analyse"}, "kdupcap: unknown command analyse (did you mean analyze?); see kdupcap --help"},
		{[]string{"ve"}, "kdupcap: unknown command ve (did you mean version?); see kdupcap --help"},
		{[]string{"co"}, "kdupcap: unknown command co; see kdupcap --help"}, // correlate or completion
		{[]string{"help", "lve"}, "kdupcap help: unknown command lve (did you mean live?); see kdupcap --help"},
		{[]string{"hepl"}, "kdupcap: unknown command hepl (did you mean help?); see kdupcap --help"}, // two letters swapped: one edit
		{[]string{"lvie"}, "kdupcap: unknown command lvie (did you mean live?); see kdupcap --help"},
		{[]string{"analyze", "--fromat", "json"}, "kdupcap analyze: unknown flag --fromat (did you mean --format?); see kdupcap analyze --help"},
		{[]string{"--bogus"}, "kdupcap: unknown flag --bogus; see kdupcap --help"},
		{[]string{"help", "frobnicate"}, "kdupcap help: unknown command frobnicate; see kdupcap --help"},
		{[]string{"version", "--format", "xml"}, "kdupcap version: --format xml: want text or json; see kdupcap version --help"},
		{[]string{"version", "now"}, "kdupcap version: unexpected argument now; see kdupcap version --help"},
		{[]string{"completion"}, "kdupcap completion: want one shell: bash, zsh or fish; see kdupcap completion --help"},
		{[]string{"completion", "tcsh"}, "kdupcap completion: unknown shell tcsh: want bash, zsh or fish; see kdupcap completion --help"},
		{[]string{"completion", "--bogus"}, "kdupcap completion: unknown flag --bogus; see kdupcap completion --help"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if got := stderr.String(); got != tt.want+"\n" {
				t.Errorf("stderr\n%q, want\n%q", got, tt.want+"\n")
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestFlagValuesAccepted: the range checks take the bounds themselves and
// the values people type.
func TestFlagValuesAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"--max-batches", "1"}, {"--max-batches", "0x100"}, {"--records", "0"}, {"--records", "1000"},
		{"--workers", "0"}, {"--workers", "64"}, {"--window", "1ns"}, {"--decompress-budget", "0.5"},
		{"--reorder-window", "0"}, {"--format=json"}, {"-format", "json"}, {"--scope", "client"},
		{"--verdict", "duplicated,unconfirmed"}, {"--sniff=false"},
	} {
		if _, err := parseAnalyzeFlags(append(args, "x.pcap"), &bytes.Buffer{}); err != nil {
			t.Errorf("analyze %v: %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"--snaplen", "1"}, {"--snaplen", "262144"}, {"--ring-mb", "4096"}, {"--count", "0"},
		{"--duration", "0"}, {"--stats-every", "0"}, {"--format", "json"},
	} {
		if _, err := parseLiveFlags(append(args, "-i", "lo"), &bytes.Buffer{}, false); err != nil {
			t.Errorf("live %v: %v", args, err)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"format", "format", 0},
		{"fromat", "format", 1}, {"windw", "window", 1}, {"kitten", "sitting", 3},
		{"ca", "abc", 3}, {"hepl", "help", 1}, {"lvie", "live", 1}, // optimal string alignment: a swap is one edit, and no substring is edited twice
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
