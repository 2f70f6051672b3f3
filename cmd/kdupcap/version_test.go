package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionInfo: the version line and JSON from build information, as go
// build writes it (a test binary holds no VCS stamp, so it is made up here).
func TestVersionInfo(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/kdupcap/kdupcap", Version: "v0.0.0-20261202020000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-02T02:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	here := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name     string
		override string
		bi       *debug.BuildInfo
		want     string
	}{
		{"go build in a checkout", "dev", stamped,
			"kdupcap v0.0.0-20261202020000-0123456789ab+dirty (commit 0123456789ab, 2026-12-02T02:00:00Z, modified) go1.26.8 linux/arm64"},
		{"release, -ldflags -X main.version", "v1.2.0", stamped,
			"kdupcap v1.2.0 (commit 0123456789ab, 2026-12-02T02:00:00Z, modified) go1.26.8 linux/arm64"},
		{"go install module@version", "dev", &debug.BuildInfo{GoVersion: "go1.26.8",
			Main: debug.Module{Path: "github.com/kdupcap/kdupcap", Version: "v1.2.0"}},
			"kdupcap v1.2.0" + " go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH},
		{"go run, no VCS", "dev", &debug.BuildInfo{Main: debug.Module{Path: "github.com/kdupcap/kdupcap", Version: "(devel)"}},
			"kdupcap devel" + here},
		{"no build information", "dev", nil, "kdupcap devel" + here},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readVersion(tt.override, tt.bi).String(); got != tt.want {
				t.Errorf("got\n%s, want\n%s", got, tt.want)
			}
		})
	}
	b, err := json.Marshal(readVersion("dev", stamped))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":"v0.0.0-20261202020000-0123456789ab+dirty","module":"github.com/kdupcap/kdupcap",` +
		`"commit":"0123456789abcdef0123456789abcdef01234567","time":"2026-12-02T02:00:00Z","modified":true,` +
		`"go":"go1.26.8","os":"linux","arch":"arm64"}`
	if string(b) != want {
		t.Errorf("JSON\n%s, want\n%s", b, want)
	}
}

// TestVersionCommand: version and --version print one line with the Go
// version; --format json the module path too.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != exitOK || stderr.Len() > 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
		line := stdout.String()
		if !strings.HasPrefix(line, "kdupcap ") || strings.Count(line, "\n") != 1 || !strings.Contains(line, runtime.Version()) {
			t.Errorf("%v: %q, want one line: kdupcap VERSION ... %s", args, line, runtime.Version())
		}
	}
	var stdout bytes.Buffer
	if code := run([]string{"version", "--format", "json"}, nil, &stdout, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var v versionInfo
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if v.Module != "github.com/kdupcap/kdupcap" || v.Go != runtime.Version() || v.Version == "" || v.OS != runtime.GOOS {
		t.Errorf("%+v", v)
	}
}
