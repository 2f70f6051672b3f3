package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// tlsSummary is what the TLS tests read of the summary line.
type tlsSummary struct {
	Type      string `json:"type"`
	Malformed int64  `json:"malformed"`
	Resyncs   int64  `json:"resyncs"`
	TLS       *struct {
		Connections []struct {
			Client      string `json:"client"`
			Broker      string `json:"broker"`
			Version     string `json:"version"`
			CipherSuite string `json:"cipher_suite"`
			SNI         string `json:"sni"`
			Status      string `json:"status"`
			Resumed     bool   `json:"resumed"`
			Bytes       int64  `json:"decrypted_bytes"`
		} `json:"connections"`
		Total           int      `json:"total"`
		Decrypted       int      `json:"decrypted"`
		NoKey           int      `json:"no_key"`
		MidStream       int      `json:"mid_stream"`
		BadMAC          int      `json:"bad_mac"`
		KeyLogMalformed int      `json:"keylog_malformed"`
		Hints           []string `json:"hints"`
	} `json:"tls"`
}

// tlsOf reads the summary line of analyze's JSON output.
func tlsOf(t *testing.T, out string) tlsSummary {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"type":"summary"`) {
			continue
		}
		var s tlsSummary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("summary line: %v", err)
		}
		return s
	}
	t.Fatal("no summary line")
	return tlsSummary{}
}

// TestTLSRealTraffic captures franz-go kgo producers that talk TLS to
// kfake (TLS 1.3, and TLS 1.2 with an ECDHE-GCM and a CBC suite), their
// produce responses answered REQUEST_TIMED_OUT after the append, with the
// client's key log written as it connects. Decrypted with the key log, the
// capture gives the findings the broker's log read back calls for, with
// every TLS connection named and decrypted; with the keys injected into
// the capture (editcap's pcapng Decryption Secrets Block), the same
// findings with no flag; with no key, no finding and TLS connections named
// "no key" with the hint; with a wrong key, no finding and the failed
// authentication counted. The capture itself holds no record value in the
// clear, so the test proves decryption.
func TestTLSRealTraffic(t *testing.T) {
	testenv.Capture(t)
	editcap := testenv.Tool(t, "editcap")
	timedOut := []kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}}
	tests := []struct {
		name        string
		maxVersion  uint16
		suites      []uint16
		idempotent  bool
		wantVersion string
		wantSuite   string
	}{
		{name: "TLS 1.3 nonidempotent", wantVersion: "TLS 1.3"},
		{name: "TLS 1.3 idempotent", idempotent: true, wantVersion: "TLS 1.3"},
		{name: "TLS 1.2 ECDHE-GCM nonidempotent", maxVersion: tls.VersionTLS12,
			suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, wantVersion: "TLS 1.2", wantSuite: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{name: "TLS 1.2 CBC nonidempotent", maxVersion: tls.VersionTLS12,
			suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}, wantVersion: "TLS 1.2", wantSuite: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			keyPath := filepath.Join(dir, "keys.log")
			keyFile, err := os.Create(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := kafkatest.NewTLS(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			tl.MaxVersion, tl.CipherSuites = tt.maxVersion, tt.suites
			s := kafkatest.Scenario{
				Name: fmt.Sprintf("tls%d", i), Topic: fmt.Sprintf("tls-%d", i),
				Records: 9, Partitions: 2, Faults: timedOut, TLS: tl,
				Producer: kafkatest.Producer{Idempotent: tt.idempotent, ClientID: "kgo-tls",
					ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 2 * time.Second},
			}
			res, pcap := runCaptured(t, s, 30*time.Second)
			if err := keyFile.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(pcap)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(res.Values[0])) {
				t.Fatal("harness: a record value is in the capture in the clear: the traffic is not TLS")
			}
			checkHarness(t, res, true, tt.idempotent)

			// With the key log.
			withKeys := cliAnalyze(t, nil, "--tls-keylog", keyPath, pcap)
			if withKeys.Code != exitOK {
				t.Fatalf("analyze --tls-keylog exited %d: %s", withKeys.Code, withKeys.Stderr)
			}
			t.Logf("%d faults applied, %d findings, log: %s", len(res.Events), len(withKeys.Findings), describeLog(res.Log))
			checkFindings(t, res, withKeys.Findings, tt.idempotent)
			sum := tlsOf(t, withKeys.Stdout)
			if sum.Malformed != 0 || sum.Resyncs != 0 {
				t.Errorf("decrypted traffic decoded with %d malformed frames, %d resyncs", sum.Malformed, sum.Resyncs)
			}
			if sum.TLS == nil || sum.TLS.Total == 0 || sum.TLS.Decrypted != sum.TLS.Total || len(sum.TLS.Connections) != sum.TLS.Total {
				t.Fatalf("TLS summary %+v: want every connection listed and decrypted", sum.TLS)
			}
			for _, c := range sum.TLS.Connections {
				if c.Status != "decrypted" || c.Version != tt.wantVersion || (tt.wantSuite != "" && c.CipherSuite != tt.wantSuite) || c.SNI != "localhost" || c.Bytes == 0 {
					t.Errorf("TLS connection %+v: want decrypted %s %s, SNI localhost", c, tt.wantVersion, tt.wantSuite)
				}
			}

			// The keys inside the capture: the same findings with no flag.
			ng := filepath.Join(dir, "with-keys.pcapng")
			if b, err := exec.Command(editcap, "--inject-secrets", "tls,"+keyPath, pcap, ng).CombinedOutput(); err != nil {
				t.Fatalf("editcap: %v: %s", err, b)
			}
			if keep := os.Getenv("KDUPCAP_KEEP_CAPTURES"); keep != "" {
				// The capture that carries its keys, as testdata keeps one.
				name := strings.NewReplacer("/", "_", " ", "-", ".", "").Replace(t.Name()) + ".pcapng"
				if b, err := os.ReadFile(ng); err == nil {
					os.WriteFile(filepath.Join(keep, name), b, 0o644)
				}
			}
			injected := cliAnalyze(t, nil, ng)
			if injected.Code != exitOK {
				t.Fatalf("analyze of the pcapng with secrets exited %d: %s", injected.Code, injected.Stderr)
			}
			if got, want := rawLines(injected.Findings), rawLines(withKeys.Findings); !slices.Equal(got, want) {
				t.Errorf("with the keys in a Decryption Secrets Block:\n%s\nwith --tls-keylog:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			// The evidence of the findings: a pcapng that carries exactly
			// the keys of its connections, read back with no flag.
			if len(withKeys.Findings) > 0 {
				checkTLSEvidence(t, dir, pcap, keyPath, keys0(t, keyPath), rawLines(withKeys.Findings))
			}

			// No key: nothing decoded, the connections named, the hint.
			noKey := cliAnalyze(t, nil, pcap)
			if noKey.Code != exitOK || len(noKey.Findings) != 0 {
				t.Errorf("without keys: exit %d, %d findings; want 0 and none", noKey.Code, len(noKey.Findings))
			}
			if s := tlsOf(t, noKey.Stdout); s.TLS == nil || s.TLS.NoKey != s.TLS.Total || s.TLS.Total == 0 ||
				len(s.TLS.Hints) == 0 || !strings.Contains(s.TLS.Hints[0], "give --tls-keylog") || s.Malformed != 0 {
				t.Errorf("without keys: summary %+v, want every TLS connection 'no key', the hint, nothing malformed", s)
			}
			var table, tableErr bytes.Buffer
			if code := run([]string{"analyze", pcap}, nil, &table, &tableErr); code != exitOK ||
				!strings.Contains(table.String(), "TLS connections") || !strings.Contains(table.String(), "no key") ||
				!strings.Contains(table.String(), "give --tls-keylog") {
				t.Errorf("without keys, the table (exit %d) does not name the TLS connections and the hint:\n%s", code, table.String())
			}

			// A wrong key: every secret's last byte changed.
			keys, err := os.ReadFile(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			wrongPath := filepath.Join(dir, "wrong.log")
			if err := os.WriteFile(wrongPath, wrongSecrets(keys), 0o600); err != nil {
				t.Fatal(err)
			}
			wrong := cliAnalyze(t, nil, "--tls-keylog", wrongPath, pcap)
			if wrong.Code != exitOK || len(wrong.Findings) != 0 {
				t.Errorf("with a wrong key: exit %d, %d findings; want 0 and none", wrong.Code, len(wrong.Findings))
			}
			if s := tlsOf(t, wrong.Stdout); s.TLS == nil || s.TLS.BadMAC == 0 || s.TLS.Decrypted != 0 || s.Malformed != 0 {
				t.Errorf("with a wrong key: summary %+v, want authentication failures counted, nothing decrypted or malformed", s.TLS)
			}
			for what, out := range map[string]string{"stdout": withKeys.Stdout + noKey.Stdout + wrong.Stdout + table.String(),
				"stderr": withKeys.Stderr + noKey.Stderr + wrong.Stderr + tableErr.String()} {
				if secret := anySecret(keys, out); secret != "" {
					t.Errorf("a secret of the key log is on %s", what)
				}
			}
		})
	}
}

var keyLine = regexp.MustCompile(`(?m)^(\S+) ([0-9a-fA-F]{64}) ([0-9a-fA-F]+)$`)

// wrongSecrets is the key log with the last hex digit of every secret
// changed.
func wrongSecrets(keys []byte) []byte {
	return keyLine.ReplaceAllFunc(keys, func(line []byte) []byte {
		out := bytes.Clone(line)
		last := len(out) - 1
		if out[last] == '0' {
			out[last] = '1'
		} else {
			out[last] = '0'
		}
		return out
	})
}

// anySecret returns the first secret of the key log found in out, "" if
// none.
func anySecret(keys []byte, out string) string {
	for _, m := range keyLine.FindAllSubmatch(keys, -1) {
		if s := strings.ToLower(string(m[3])); strings.Contains(strings.ToLower(out), s) {
			return s
		}
	}
	return ""
}

// keys0 reads the key log at path.
func keys0(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkTLSEvidence writes --write-dups of a TLS capture decrypted with the
// key log and checks the file: a pcapng whose Decryption Secrets Block
// holds lines of the key log only, one client random per TLS connection
// the file holds, and which analyze reads back, with no flag, into the
// same findings.
func checkTLSEvidence(t *testing.T, dir, pcap, keyPath string, keys []byte, want []string) {
	t.Helper()
	dups := filepath.Join(dir, "dups.pcapng")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"analyze", "--format", "json", "--tls-keylog", keyPath, "--write-dups", dups, pcap}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("--write-dups exited %d: %s", code, stderr.String())
	}
	src, err := capture.Open(dups)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for {
		if _, err := src.Next(); err != nil {
			break
		}
	}
	if len(src.Secrets()) != 1 {
		t.Fatalf("the evidence file has %d secrets blocks, want 1", len(src.Secrets()))
	}
	randoms := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(src.Secrets()[0])), "\n") {
		if !bytes.Contains(keys, []byte(line)) {
			t.Errorf("the evidence's secrets hold a line not in the key log: %.40s...", line)
		}
		if f := strings.Fields(line); len(f) == 3 {
			randoms[f[1]] = true
		}
	}
	back := cliAnalyze(t, nil, dups)
	if back.Code != exitOK {
		t.Fatalf("analyze of the evidence exited %d: %s", back.Code, back.Stderr)
	}
	norm := func(lines []string) string { return connIDs.ReplaceAllString(strings.Join(lines, "\n"), "conn") }
	if got := rawLines(back.Findings); norm(got) != norm(want) {
		t.Errorf("the evidence read back (connection numbers aside):\n%s\nwant:\n%s", norm(got), norm(want))
	}
	if s := tlsOf(t, back.Stdout); s.TLS == nil || s.TLS.Decrypted != s.TLS.Total || s.TLS.Total != len(randoms) {
		t.Errorf("the evidence's TLS summary %+v: want each of its %d keyed connections decrypted", s.TLS, len(randoms))
	}
}

// TestTLSCaptureTshark: Wireshark's own TLS decryption, from the keys the
// committed TLS capture carries, sees the produce requests kdupcap decrypts
// and decodes: as many, with the same correlation IDs. A second opinion on
// the decryption that shares no code with it.
func TestTLSCaptureTshark(t *testing.T) {
	tshark := testenv.Tool(t, "tshark")
	file := seedPath("kgo-tls13-nonidempotent-timeout.pcapng")
	res := cliAnalyze(t, nil, file)
	if res.Code != exitOK || len(res.Findings) == 0 {
		t.Fatalf("exit %d, %d findings: %s", res.Code, len(res.Findings), res.Stderr)
	}
	port := strings.TrimPrefix(res.Findings[0].Broker, "127.0.0.1:")
	out, err := exec.Command(tshark, "-r", file, "-d", "tcp.port=="+port+",tls", "-d", "tls.port=="+port+",kafka",
		"-Y", "kafka.api_key == 0 && !kafka.response_frame", "-T", "fields", "-e", "tcp.srcport", "-e", "kafka.correlation_id").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	seen := map[string]bool{}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	for i := 0; i+1 < len(lines); i += 2 {
		seen[lines[i]+"/"+lines[i+1]] = true
	}
	if int64(len(seen)) != res.Summary.ProduceRequests || len(seen) == 0 {
		t.Errorf("tshark decrypts %d produce requests, kdupcap %d", len(seen), res.Summary.ProduceRequests)
	}
	for _, f := range res.Findings {
		for _, a := range f.Attempts {
			cl := strings.TrimPrefix(a.Client, "127.0.0.1:")
			if !seen[fmt.Sprintf("%s/%d", cl, a.CorrelationID)] {
				t.Errorf("attempt correlation %d from %s: tshark decrypts no such produce request", a.CorrelationID, a.Client)
			}
		}
	}
}

// TestTLSEvidenceFromHandshake: --write-dups of a TLS connection whose
// first re-sent request came long after its handshake (here 2 s: the
// committed TLS capture with every packet from the first attempt on moved
// later) holds the connection from its handshake, so that the evidence
// decrypts again into the same findings. Its spans alone (200 ms around
// each attempt) would leave the handshake out: nothing decrypts then.
func TestTLSEvidenceFromHandshake(t *testing.T) {
	seed := seedPath("kgo-tls13-nonidempotent-timeout.pcapng")
	first := cliAnalyzeOK(t, seed).Findings
	if len(first) == 0 {
		t.Fatal("the committed TLS capture has no finding")
	}
	var from time.Time
	for _, f := range first {
		for _, a := range f.Attempts {
			at, err := time.Parse(time.RFC3339Nano, a.Time)
			if err != nil {
				t.Fatal(err)
			}
			if from.IsZero() || at.Before(from) {
				from = at
			}
		}
	}
	src, err := capture.Open(seed)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	pcap := filepath.Join(dir, "late.pcap")
	f, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	moved := 0
	for i := 0; ; i++ {
		p, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.WriteFileHeader(262144, p.LinkType); err != nil {
				t.Fatal(err)
			}
		}
		ci := p.CI
		if !ci.Timestamp.Before(from) {
			ci.Timestamp = ci.Timestamp.Add(2 * time.Second)
			moved++
		}
		if err := w.WritePacket(ci, p.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if moved == 0 || len(src.Secrets()) != 1 {
		t.Fatalf("%d packets moved, %d secrets blocks: want some and 1", moved, len(src.Secrets()))
	}
	keyPath := filepath.Join(dir, "keys.log")
	if err := os.WriteFile(keyPath, src.Secrets()[0], 0o600); err != nil {
		t.Fatal(err)
	}
	late := cliAnalyzeOK(t, "--tls-keylog", keyPath, pcap)
	// The committed capture's findings (its golden file says them) are
	// those of the moved one but for their times.
	if len(late.Findings) != len(first) {
		t.Fatalf("the moved capture has %d findings, want the %d of the committed one", len(late.Findings), len(first))
	}
	for i, f := range late.Findings {
		g := first[i]
		ids := func(f cliFinding) (out []int32) {
			for _, a := range f.Attempts {
				out = append(out, a.CorrelationID)
			}
			return out
		}
		if f.Topic != g.Topic || f.Partition != g.Partition || f.Verdict != g.Verdict ||
			!slices.Equal(f.AppendedOffsets, g.AppendedOffsets) || !slices.Equal(ids(f), ids(g)) {
			t.Errorf("finding %d of the moved capture: %s %d %s %v %v, want the committed one's %s %d %s %v %v", i,
				f.Topic, f.Partition, f.Verdict, f.AppendedOffsets, ids(f), g.Topic, g.Partition, g.Verdict, g.AppendedOffsets, ids(g))
		}
	}
	checkTLSEvidence(t, dir, pcap, keyPath, keys0(t, keyPath), rawLines(late.Findings))
}
