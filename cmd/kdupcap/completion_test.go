package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// completionScript writes the script of shell to a file and returns its path.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"completion", shell}, nil, &stdout, &stderr); code != exitOK || stderr.Len() > 0 {
		t.Fatalf("completion %s: exit %d, stderr %q", shell, code, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "kdupcap."+shell)
	if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompletionParses: each shell parses its script without running it.
func TestCompletionParses(t *testing.T) {
	for _, tt := range []struct {
		shell string
		check []string // the parser's flags
	}{
		{"bash", []string{"-n"}},
		{"zsh", []string{"-n"}},
		{"fish", []string{"--no-execute"}},
	} {
		t.Run(tt.shell, func(t *testing.T) {
			sh := testenv.Tool(t, tt.shell)
			script := completionScript(t, tt.shell)
			if out, err := exec.Command(sh, append(tt.check, script)...).CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("%s %v: %v\n%s", tt.shell, tt.check, err, out)
			}
		})
	}
}

// flagNames are the flags a command parses, as typed, and --help.
func flagNames(t *testing.T, name string) []string {
	t.Helper()
	c, ok := lookup(commands(), name)
	if !ok {
		t.Fatalf("no command %s", name)
	}
	names := []string{"--help"}
	c.flags().VisitAll(func(f *flag.Flag) { names = append(names, dashed(f.Name)) })
	slices.Sort(names)
	return names
}

// TestBashCompletion sources the bash script and completes command lines
// as bash would: the words it offers, which for flags are those parsed.
func TestBashCompletion(t *testing.T) {
	bash := testenv.Tool(t, "bash")
	script := completionScript(t, "bash")
	dir := t.TempDir()
	for _, f := range []string{"dump.pcap", "dump.pcapng", "keys.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "evidence"), 0o755); err != nil {
		t.Fatal(err)
	}
	// complete sets COMP_WORDS as bash splits the line (--format=j is
	// --format, = and j), calls _kdupcap and prints COMPREPLY.
	complete := func(words ...string) []string {
		t.Helper()
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1" || exit 1
shift
[[ $(complete -p kdupcap) == "complete -F _kdupcap kdupcap" ]] || { echo "complete -p: $(complete -p kdupcap)"; exit 1; }
COMP_WORDS=("$@") COMP_CWORD=$(($# - 1))
_kdupcap 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`, "bash", script)
		cmd.Args = append(cmd.Args, words...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		return got
	}
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{"kdupcap", ""}, []string{"--help", "--version", "analyze", "completion", "correlate", "help", "live", "version"}},
		{[]string{"kdupcap", "an"}, []string{"analyze"}},
		{[]string{"kdupcap", "analyze", "--fo"}, []string{"--force", "--format"}},
		{[]string{"kdupcap", "analyze", "--format", ""}, []string{"html", "json", "lines", "table"}},
		{[]string{"kdupcap", "analyze", "--format", "=", "j"}, []string{"json"}},
		{[]string{"kdupcap", "analyze", "-scope", "c"}, []string{"client", "connection"}},
		{[]string{"kdupcap", "analyze", "--verdict", "duplicated,un"}, []string{"duplicated,unconfirmed"}},
		{[]string{"kdupcap", "analyze", "--window", ""}, nil},
		{[]string{"kdupcap", "analyze", "du"}, []string{"dump.pcap", "dump.pcapng"}},
		{[]string{"kdupcap", "analyze", "--tls-keylog", "k"}, []string{"keys.log"}},
		{[]string{"kdupcap", "analyze", "-"}, flagNames(t, "analyze")},
		{[]string{"kdupcap", "live", "-"}, flagNames(t, "live")},
		{[]string{"kdupcap", "live", "--format", ""}, []string{"json", "lines"}},
		{[]string{"kdupcap", "live", "--evidence", "e"}, []string{"evidence"}},
		{[]string{"kdupcap", "live", "-i", "an"}, []string{"any"}},
		{[]string{"kdupcap", "live", "du"}, nil}, // live takes no files
		{[]string{"kdupcap", "version", "--format", ""}, []string{"json", "text"}},
		{[]string{"kdupcap", "completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"kdupcap", "help", "l"}, []string{"live"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.words, " "), func(t *testing.T) {
			if got := complete(tt.words...); !slices.Equal(got, tt.want) {
				t.Errorf("COMPREPLY %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFishCompletion asks fish itself what it completes (complete -C): the
// flags parsed, their fixed values, the commands.
func TestFishCompletion(t *testing.T) {
	fish := testenv.Tool(t, "fish")
	script := completionScript(t, "fish")
	complete := func(line string) []string {
		t.Helper()
		out, err := exec.Command(fish, "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, script, line).Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if w, _, _ := strings.Cut(l, "\t"); w != "" {
				got = append(got, w)
			}
		}
		slices.Sort(got)
		return got
	}
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"kdupcap an", []string{"analyze"}},
		{"kdupcap analyze --fo", []string{"--force", "--format"}},
		{"kdupcap analyze --format ", []string{"html", "json", "lines", "table"}},
		{"kdupcap live --format=", []string{"--format=json", "--format=lines"}},
		{"kdupcap completion ", []string{"bash", "fish", "zsh"}},
	} {
		if got := complete(tt.line); !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q, want %q", tt.line, got, tt.want)
		}
	}
	for _, name := range []string{"analyze", "live"} {
		want := flagNames(t, name)
		var got []string
		for _, w := range complete("kdupcap " + name + " -") {
			if w != "-h" { // fish offers -h beside --help
				got = append(got, w)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s flags %q, want %q", name, got, want)
		}
	}
}

// TestZshCompletion: the zsh script has an _arguments spec for every flag.
func TestZshCompletion(t *testing.T) {
	var stdout bytes.Buffer
	run([]string{"completion", "zsh"}, nil, &stdout, &bytes.Buffer{})
	script := stdout.String()
	for _, name := range []string{"analyze", "live", "version"} {
		for _, f := range flagNames(t, name) {
			if !strings.Contains(script, "'"+f+"[") && !strings.Contains(script, "'"+f+"=[") && !strings.Contains(script, "'*"+f) && f != "--help" {
				t.Errorf("%s %s: no spec", name, f)
			}
		}
	}
	for _, want := range []string{"#compdef kdupcap", "'--format=[output format\\: table, json (JSON Lines), lines (one line...]:format:(table json lines html)'", "'*:file:_files'", "compdef _kdupcap kdupcap"} {
		if !strings.Contains(script, want) {
			t.Errorf("no %q in\n%s", want, script)
		}
	}
}
