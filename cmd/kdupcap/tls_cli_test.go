package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSKeyLogFlag: --tls-keylog takes several files; a malformed line is
// named by file and line on stderr and counted in the summary, never
// fatal; a key log that cannot be opened is an input error (exit 2) that
// names it, with the analysis of the capture still printed.
func TestTLSKeyLogFlag(t *testing.T) {
	capFile := seedPath("kgo-tls13-nonidempotent-timeout.pcapng")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.log")
	if err := os.WriteFile(bad, []byte("# comment\n\nCLIENT_RANDOM nothex 00\nCLIENT_RANDOM "+strings.Repeat("ab", 32)+" "+strings.Repeat("cd", 48)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.log")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		stderr    []string
		malformed int
	}{
		{"a malformed line", []string{"--tls-keylog", bad, "--tls-keylog", empty}, exitOK, []string{"bad.log:3:"}, 1},
		{"a missing key log", []string{"--tls-keylog", filepath.Join(dir, "missing.log")}, exitUsage, []string{"missing.log"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(append([]string{"analyze", "--format", "json"}, tc.args...), capFile), nil, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, stderr.String())
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), strings.Repeat("cd", 48)) {
				t.Error("a secret of the key log is on stderr")
			}
			res := parseJSONLines(t, bytes.NewReader(stdout.Bytes()))
			if len(res.Findings) != 2 {
				t.Errorf("%d findings, want the capture's 2 (its own keys decrypt it)", len(res.Findings))
			}
			sum := tlsOf(t, stdout.String())
			if sum.TLS == nil || sum.TLS.KeyLogMalformed != tc.malformed || sum.TLS.Decrypted != sum.TLS.Total {
				t.Errorf("summary tls %+v: want %d malformed key log lines, every connection decrypted", sum.TLS, tc.malformed)
			}
		})
	}
}
