package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"100MB", 100 << 20, true},
		{"64kb", 64 << 10, true},
		{"1GB", 1 << 30, true},
		{"123B", 123, true},
		{"4096", 4096, true},
		{"0", 0, false},
		{"-5MB", 0, false},
		{"MB", 0, false},
		{"12XB", 0, false},
		{"99999999999GB", 0, false},
	}
	for _, tt := range tests {
		got, err := gencap.ParseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "g.pcap")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"writes", []string{"-o", out, "-size", "256KB", "-mtu", "1500", "-seed", "3", "-resend-every", "5"}, 0, gencap.ManifestPath(out) + "\n"},
		{"no output", []string{"-size", "1MB"}, 2, ""},
		{"bad size", []string{"-o", out, "-size", "big"}, 2, ""},
		{"bad mtu", []string{"-o", out, "-mtu", "9000"}, 1, ""},
		{"bad flag", []string{"-nope"}, 2, ""},
		{"unwritable", []string{"-o", filepath.Join(dir, "missing", "g.pcap"), "-size", "1KB"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.stdout)
			}
			if tt.code != 0 && !strings.HasPrefix(stderr.String(), "gencap") && !strings.Contains(stderr.String(), "flag") {
				t.Errorf("stderr %q", stderr.String())
			}
		})
	}
	f, err := os.Open(gencap.ManifestPath(out))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := gencap.ReadManifest(f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Totals.Bytes != st.Size() || m.Config.MTU != 1500 || m.Config.Seed != 3 || len(m.Resends) == 0 {
		t.Errorf("manifest %+v for a %d-byte file", m.Totals, st.Size())
	}
}
