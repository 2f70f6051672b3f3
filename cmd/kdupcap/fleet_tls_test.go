package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

// TestFleetTLSSASL: analyze --attempts publishes, and correlate --from
// reads, through a kfake cluster that takes TLS only and SCRAM-SHA-256
// only (--kafka-tls, --kafka-ca, --kafka-sasl, --kafka-user,
// --kafka-password-file). correlate --format table prints the findings
// analyze finds in the capture, each with its host. The password is in
// nothing either prints, nor in correlate's metrics, nor in the records
// published.
func TestFleetTLSSASL(t *testing.T) {
	const password = "pw-7f3c1e9a-never-shown"
	tl, err := kafkatest.NewTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := &kafkatest.SASL{Mechanism: "SCRAM-SHA-256", User: "kdupcap", Password: password}
	cl, err := kfake.NewCluster(append(auth.ClusterOpts(), kfake.NumBrokers(1), kfake.TLS(tl.ServerConfig()),
		kfake.SeedTopics(2, "kdupcap-attempts"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dir := t.TempDir()
	ca, pw := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "password")
	if err := os.WriteFile(ca, tl.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "kafka://" + cl.ListenAddrs()[0] + "/kdupcap-attempts"
	kafka := []string{"--kafka-tls", "--kafka-ca", ca, "--kafka-sasl", "scram-sha-256", "--kafka-user", "kdupcap", "--kafka-password-file", pw}
	pcap := filepath.Join("..", "..", "testdata", "kgo-v13-nonidempotent-closed-after-append.pcap")
	want := cliAnalyzeOK(t, pcap).Findings
	if len(want) == 0 {
		t.Fatalf("no finding in %s", pcap)
	}

	res := cliAnalyze(t, nil, append([]string{"--attempts", url, "--host", "broker-0", pcap}, kafka...)...)
	if res.Code != exitOK || !strings.Contains(res.Stdout, `"attempts_published":{"target"`) {
		t.Fatalf("analyze --attempts over TLS and SCRAM: exit %d: %s\n%s", res.Code, res.Stderr, res.Stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kafkatest.ReadBack(ctx, cl.ListenAddrs()[0], "kdupcap-attempts"); err == nil {
		t.Fatalf("harness: the cluster answers plaintext without SASL")
	}
	log, err := kafkatest.ReadBackAuth(ctx, cl.ListenAddrs()[0], "kdupcap-attempts", auth, tl)
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, p := range log.Partitions {
		for _, r := range p.Records {
			published++
			if strings.Contains(r.Value, password) || strings.Contains(r.Key, password) {
				t.Errorf("a published record holds the password")
			}
		}
	}
	if published == 0 {
		t.Fatalf("no attempt record in the topic")
	}

	// correlate, the table format, metrics scraped while it runs.
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	args := append([]string{"--from", url, "--group", "tls", "--format", "table", "--metrics", "127.0.0.1:0", "--exit-idle", "2s", "--duration", "30s"}, kafka...)
	go func() { done <- runCorrelate(context.Background(), args, &stdout, &stderr) }()
	metricsURL := regexp.MustCompile(`metrics on (http://\S+/metrics)`)
	var scraped string
	if !waitFor(10*time.Second, func() bool { return metricsURL.MatchString(stderr.String()) }) {
		t.Fatalf("correlate serves no metrics: %s", stderr.String())
	}
	// Scraped until it stops: the last scrape has the counters moved.
	var code int
	deadline := time.After(40 * time.Second)
scrape:
	for {
		if resp, err := http.Get(metricsURL.FindStringSubmatch(stderr.String())[1]); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			scraped += string(b)
		}
		select {
		case code = <-done:
			break scrape
		case <-deadline:
			t.Fatal("correlate did not stop")
		case <-time.After(300 * time.Millisecond):
		}
	}
	out := stdout.String()
	if code != exitOK {
		t.Fatalf("correlate over TLS and SCRAM: exit %d: %s\n%s", code, stderr.String(), out)
	}
	// The table: a numbered header per finding, its verdict in capitals,
	// its CRC, its attempts' host, then the fleet summary.
	heads := regexp.MustCompile(`(?m)^#\d+ [A-Z]+ `).FindAllString(out, -1)
	if len(heads) != len(want) {
		t.Errorf("correlate's table has %d findings, analyze finds %d:\n%s", len(heads), len(want), out)
	}
	for _, f := range want {
		if !strings.Contains(out, f.BatchCRC) || !strings.Contains(out, strings.ToUpper(f.Verdict)) {
			t.Errorf("correlate's table lacks finding %s %s:\n%s", f.Verdict, f.BatchCRC, out)
		}
	}
	// Each finding's three heading lines are analyze's table's, but for
	// the connection numbers (a correlation numbers the hosts' apart).
	var table strings.Builder
	if code := run([]string{"analyze", "--format", "table", pcap}, nil, &table, io.Discard); code != exitOK {
		t.Fatalf("analyze --format table: exit %d", code)
	}
	if g, w := findingHeads(out), findingHeads(table.String()); len(w) == 0 || strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("correlate's table findings:\n%s\nanalyze's:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	for _, s := range []string{"broker-0", "fleet: ", "read from " + url, "(group tls)"} {
		if !strings.Contains(out, s) {
			t.Errorf("correlate's table lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(scraped, "kdupcap_") {
		t.Errorf("no kdupcap metric scraped: %.500s", scraped)
	}
	for name, s := range map[string]string{"analyze's output": res.Stdout + res.Stderr, "correlate's output": out,
		"correlate's stderr": stderr.String(), "correlate's metrics": scraped} {
		if strings.Contains(s, password) {
			t.Errorf("%s holds the password", name)
		}
	}
}

// connNumbers matches the connection numbers of a table's finding lines.
var connNumbers = regexp.MustCompile(`connections? [\d, ]+`)

// findingHeads returns the first three lines of each finding of a table
// (its heading, its batch, its reason), connection numbers left out.
func findingHeads(table string) []string {
	lines := strings.Split(table, "\n")
	var out []string
	for i, l := range lines {
		if regexp.MustCompile(`^#\d+ `).MatchString(l) && i+2 < len(lines) {
			for _, h := range lines[i : i+3] {
				out = append(out, connNumbers.ReplaceAllString(h, "connection N"))
			}
		}
	}
	return out
}
