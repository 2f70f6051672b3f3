package gencap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/gencap"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
)

// This test runs kdupcap's own pipeline on TLS captures (gencap itself
// never imports it): decrypted, their findings are the manifest's; without
// keys there are none.

// writeTLS generates cfg into dir and returns the capture's and the key
// log's paths.
func writeTLS(t *testing.T, dir string, cfg gencap.Config) (string, string, *gencap.Manifest) {
	t.Helper()
	var file, keys bytes.Buffer
	m, err := gencap.GenerateKeyLog(&file, &keys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tls.pcap")
	if cfg.Secrets {
		path += "ng"
	}
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gencap.KeyLogPath(path), keys.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, gencap.KeyLogPath(path), m
}

// analyze runs an analysis of path with the key logs and returns its
// findings and summary.
func analyze(t *testing.T, path string, workers int, keyLogs ...string) ([]detect.Finding, report.Summary) {
	t.Helper()
	a := pipeline.NewAnalysis(pipeline.Options{Workers: workers, TLSKeyLogs: keyLogs})
	if errs := a.Read(pipeline.Inputs{Files: []string{path}}, nil); len(errs) > 0 {
		t.Fatal(errs[0])
	}
	f := a.Finish()
	return f, a.Summary(nil)
}

func found(findings []detect.Finding) []gencap.Found {
	out := make([]gencap.Found, 0, len(findings))
	for _, f := range findings {
		ids := make([]int32, len(f.Attempts))
		for j, a := range f.Attempts {
			ids[j] = a.CorrelationID
		}
		out = append(out, gencap.Found{Client: f.Client.String(), Broker: f.Broker.String(), Topic: f.Topic, Partition: f.Partition,
			CorrelationIDs: ids, Verdict: string(f.Verdict), AppendedOffsets: f.AppendedOffsets})
	}
	return out
}

func TestTLSCaptureDecryptsToManifest(t *testing.T) {
	tests := []struct {
		name    string
		cfg     gencap.Config
		workers int
		keyFile bool // analyze with --tls-keylog
	}{
		{"loopback", gencap.Config{TargetBytes: 2 << 20, MTU: 65535, Seed: 1, Conns: 12, ResendEvery: 10, RetransmitEvery: 7, TLS: true}, 1, true},
		{"ethernet sharded", gencap.Config{TargetBytes: 2 << 20, MTU: 1500, Seed: 2, Conns: 12, ResendEvery: 10, RetransmitEvery: 7, TLS: true}, 4, true},
		{"pcapng secrets, no key file", gencap.Config{TargetBytes: 2 << 20, MTU: 1500, Seed: 3, Conns: 12, ResendEvery: 10, RetransmitEvery: 7, TLS: true, Secrets: true}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, keys, m := writeTLS(t, t.TempDir(), tt.cfg)
			var keyLogs []string
			if tt.keyFile {
				keyLogs = []string{keys}
			}
			findings, s := analyze(t, path, tt.workers, keyLogs...)
			if err := m.Check(found(findings)); err != nil {
				t.Fatal(err)
			}
			if len(m.Resends) == 0 {
				t.Fatal("no resends to find")
			}
			tot := m.Totals
			if s.TLS == nil || int64(s.TLS.Total) != tot.Connections || int64(s.TLS.Decrypted) != tot.Connections || s.TLS.BadMAC+s.TLS.Undecryptable != 0 {
				t.Fatalf("TLS summary %+v for %d connections", s.TLS, tot.Connections)
			}
			if s.Packets != tot.Packets || s.Gaps != 0 || s.Malformed != 0 || s.ProduceRequests != tot.ProduceRequests ||
				s.ProduceResponses != tot.ProduceResponses || s.Batches != tot.Batches || s.Records != tot.Records {
				t.Fatalf("summary packets %d gaps %d malformed %d requests %d responses %d batches %d records %d; manifest %+v",
					s.Packets, s.Gaps, s.Malformed, s.ProduceRequests, s.ProduceResponses, s.Batches, s.Records, tot)
			}
			for _, c := range s.TLS.Connections {
				if c.Version != "TLS 1.3" || c.CipherSuite != "TLS_AES_128_GCM_SHA256" && c.CipherSuite != "TLS_CHACHA20_POLY1305_SHA256" {
					t.Errorf("connection %v: %s %s", c.Client, c.Version, c.CipherSuite)
				}
			}
			if tt.cfg.Secrets {
				return // it carries its keys
			}

			// Without keys: the connections are named TLS, nothing is found.
			findings, s = analyze(t, path, tt.workers)
			if len(findings) != 0 || s.ProduceRequests != 0 || s.Malformed != 0 {
				t.Fatalf("without keys: %d findings, %d produce requests, %d malformed", len(findings), s.ProduceRequests, s.Malformed)
			}
			if s.TLS == nil || int64(s.TLS.NoKey) != tot.Connections {
				t.Fatalf("without keys: TLS summary %+v for %d connections", s.TLS, tot.Connections)
			}
		})
	}
}
