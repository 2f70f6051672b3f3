package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

func TestRunTLS(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, file string
		args       []string
		magic      []byte
	}{
		{"pcap and key log", "t.pcap", []string{"-tls"}, []byte{0xd4, 0xc3, 0xb2, 0xa1}},
		{"pcapng with secrets", "t.pcapng", []string{"-tls", "-secrets"}, []byte{0x0a, 0x0d, 0x0d, 0x0a}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, tt.file)
			var stdout, stderr bytes.Buffer
			args := append([]string{"-o", out, "-size", "256KB", "-resend-every", "5"}, tt.args...)
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			file, err := os.ReadFile(out)
			if err != nil || !bytes.HasPrefix(file, tt.magic) {
				t.Fatalf("capture %v, starts %x", err, file[:min(4, len(file))])
			}
			keys, err := os.ReadFile(gencap.KeyLogPath(out))
			if err != nil || !strings.HasPrefix(string(keys), "CLIENT_HANDSHAKE_TRAFFIC_SECRET ") {
				t.Fatalf("key log: %v, %.40q", err, keys)
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
			if !m.Config.TLS || m.TLS == nil || m.TLS.KeyLogLines != int64(strings.Count(string(keys), "\n")) || m.Totals.Bytes != int64(len(file)) {
				t.Fatalf("manifest config %+v TLS %+v totals %+v", m.Config, m.TLS, m.Totals)
			}
			matches, _ := filepath.Glob(filepath.Join(dir, "*.tmp*"))
			if len(matches) != 0 {
				t.Fatalf("temporary files left: %v", matches)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-o", filepath.Join(dir, "x.pcap"), "-secrets"}, &stdout, &stderr); code != 1 {
		t.Fatalf("-secrets without -tls: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.pcap")); err == nil {
		t.Fatal("a refused config left a capture")
	}
}
