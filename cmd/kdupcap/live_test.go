package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// lockedBuffer is a bytes.Buffer safe for the live run writing while the
// test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond every 50ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestLive sniffs the loopback while a real kgo producer writes to a kfake
// broker that answers REQUEST_TIMED_OUT after the append, with metrics, the
// Kafka emitter (to a second kfake cluster) and evidence pcaps on. Findings
// must arrive while the run goes on and match the log read back; the metrics
// and the emitted records must say the same; every evidence pcap must give
// the same finding to analyze.
func TestLive(t *testing.T) {
	testenv.Root(t)
	const topic, emitTopic = "live-1", "kdupcap-findings"
	broker, err := kafkatest.NewCluster([]kafkatest.Fault{{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}},
		kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	emit, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, emitTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer emit.Close()
	emitAddr := emit.ListenAddrs()[0]
	_, emitPort, _ := net.SplitHostPort(emitAddr)
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	evidence := t.TempDir()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	// The emitter's broker port is captured too: kdupcap must leave its own
	// emission traffic out of the analysis.
	args := []string{"-i", "lo", "--port", strconv.Itoa(broker.Port()) + "," + emitPort, "--format", "json",
		"--metrics", metricsAddr, "--emit", "kafka://" + emitAddr + "/" + emitTopic, "--evidence", evidence,
		"--settle", "2s", "--duration", "60s"}
	go func() { done <- runLive(ctx, args, &stdout, &stderr) }()
	if !waitFor(10*time.Second, func() bool { return strings.Contains(stderr.String(), "metrics on") }) {
		cancel()
		t.Fatalf("live did not start: %s", stderr.String())
	}

	// A second instance stops by itself after its first finding (--count).
	// Its metrics line says its ring is open (the sinks open after the
	// socket): nothing is produced before, or it could miss the first
	// fault.
	var countOut, countErr lockedBuffer
	countDone := make(chan int, 1)
	go func() {
		countDone <- runLive(ctx, []string{"-i", "lo", "--port", strconv.Itoa(broker.Port()), "--format", "json",
			"--metrics", "127.0.0.1:0", "--count", "1", "--duration", "60s"}, &countOut, &countErr)
	}()
	if !waitFor(10*time.Second, func() bool { return strings.Contains(countErr.String(), "metrics on") }) {
		cancel()
		t.Fatalf("the --count instance did not start: %s", countErr.String())
	}

	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	values := kafkatest.Values("live", 9)
	if err := kafkatest.Produce(pctx, broker.Addr(), topic, kafkatest.Producer{
		ClientID: "kgo-live", ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 2 * time.Second, Partitions: 2, PerRequest: 1,
	}, values); err != nil {
		t.Fatalf("produce: %v", err)
	}
	log, err := kafkatest.ReadBack(pctx, broker.Addr(), topic)
	if err != nil {
		t.Fatal(err)
	}
	events := broker.Events()
	dups := log.Duplicates()
	if len(dups) == 0 {
		t.Fatalf("harness: no record held twice; faults %+v", events)
	}

	// Findings are decided when the retry is answered: they must show up
	// while live still runs, not at the final flush.
	countFindings := func() int { return strings.Count(stdout.String(), `"type":"duplicate"`) }
	if !waitFor(10*time.Second, func() bool { return countFindings() >= len(events) }) {
		t.Errorf("while running: %d findings, want %d (one per fault)", countFindings(), len(events))
	}
	scrape := func() string {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	wantMetric := fmt.Sprintf(`kdupcap_findings_total{verdict="duplicated"} %d`, len(events))
	if !waitFor(5*time.Second, func() bool { return strings.Contains(scrape(), wantMetric) }) {
		t.Errorf("metrics lack %q:\n%s", wantMetric, grepLines(scrape(), "kdupcap_findings_total"))
	}
	if m := scrape(); !strings.Contains(m, "kdupcap_produce_latency_seconds_count") {
		t.Errorf("metrics lack the produce latency histogram")
	}

	select {
	case code := <-countDone:
		if code != exitOK || !strings.Contains(countOut.String(), `"type":"duplicate"`) || !strings.Contains(countOut.String(), `"type":"summary"`) {
			t.Errorf("--count 1: exit %d, output %s, stderr %s", code, countOut.String(), countErr.String())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("--count 1 did not stop after its first finding: %s", countOut.String())
	}

	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("live exited %d: %s", code, stderr.String())
	}

	out := parseJSONLines(t, strings.NewReader(stdout.String()))
	findings, summary := out.Findings, out.Summary
	if !out.SawSummary {
		t.Fatalf("no summary after the stop: %s", stdout.String())
	}
	res := &kafkatest.Result{Log: log, Events: events, Port: broker.Port()}
	checkFindings(t, res, findings, false)
	for _, c := range summary.KafkaConnections {
		if c.Broker == emitAddr {
			t.Errorf("kdupcap analyzed its own emission traffic: %+v", c)
		}
	}

	// Every finding was emitted, byte for byte as printed.
	emitted := readTopic(t, emitAddr, emitTopic, len(findings)+1)
	printed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		printed[l] = true
	}
	nf := 0
	for _, v := range emitted {
		if strings.Contains(v, `"type":"duplicate"`) {
			nf++
			if !printed[v] {
				t.Errorf("emitted record not printed: %s", v)
			}
		}
	}
	if nf != len(findings) {
		t.Errorf("%d findings emitted, %d printed", nf, len(findings))
	}

	// Each evidence pcap, analyzed, gives back its finding.
	pcaps, _ := filepath.Glob(filepath.Join(evidence, "*.pcap"))
	if len(pcaps) != len(findings) {
		t.Fatalf("%d evidence pcaps for %d findings", len(pcaps), len(findings))
	}
	for _, p := range pcaps {
		got := cliAnalyze(t, nil, "--port", strconv.Itoa(broker.Port()), p)
		if got.Code != exitOK || len(got.Findings) == 0 {
			t.Errorf("evidence %s: exit %d, no finding", p, got.Code)
			continue
		}
		// The file holds the finding it is named for (its first attempt's
		// correlation ID), and others whose attempts fell in its span.
		corr := p[strings.LastIndex(p, "-corr")+len("-corr") : len(p)-len(".pcap")]
		var named bool
		for _, g := range got.Findings {
			if !slicesContainFinding(findings, g) {
				t.Errorf("evidence %s gives a finding live did not report: %+v", p, g)
			}
			named = named || strconv.Itoa(int(g.Attempts[0].CorrelationID)) == corr
		}
		if !named {
			t.Errorf("evidence %s lacks its own finding (first attempt %s)", p, corr)
		}
	}
}

func slicesContainFinding(fs []cliFinding, g cliFinding) bool {
	for _, f := range fs {
		// Produce v13 names topics by ID; the evidence pcap holds no
		// Metadata response to name it (kgo asks on another connection),
		// so analyze shows the ID there.
		sameTopic := f.Topic == g.Topic || (f.TopicID != nil && g.TopicID != nil && *f.TopicID == *g.TopicID)
		if sameTopic && f.Partition == g.Partition && f.BatchCRC == g.BatchCRC &&
			f.Verdict == g.Verdict && fmt.Sprint(attemptIDs(f)) == fmt.Sprint(attemptIDs(g)) {
			return true
		}
	}
	return false
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// readTopic consumes at least want records of topic (or what is there within
// 10s) and returns their values.
func readTopic(t *testing.T, addr, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vals []string
	for len(vals) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	return vals
}

// TestLiveUnprivileged: without the privilege, live exits 2 with one line
// saying what is needed. Run as nobody through setpriv on a copy of the test
// binary (the build directory is private).
func TestLiveUnprivileged(t *testing.T) {
	if os.Getenv("KDUPCAP_LIVE_CHILD") == "1" {
		var stdout, stderr bytes.Buffer
		code := run([]string{"live", "-i", "lo", "--duration", "1s"}, nil, &stdout, &stderr)
		fmt.Printf("exit=%d\n%s", code, stderr.String())
		return
	}
	testenv.Root(t) // it runs as root and drops to nobody
	setpriv := testenv.Tool(t, "setpriv")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(dir, "kdupcap.test")
	if err := os.WriteFile(copyExe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", copyExe, "-test.run=^TestLiveUnprivileged$")
	cmd.Env = append(os.Environ(), "KDUPCAP_LIVE_CHILD=1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "exit=2\n") {
		t.Fatalf("want exit 2, got:\n%s", s)
	}
	msg := s[strings.Index(s, "exit=2\n")+len("exit=2\n"):]
	first := strings.SplitN(msg, "\n", 2)[0]
	if !strings.Contains(first, "root or CAP_NET_RAW") || !strings.Contains(first, "setcap") {
		t.Errorf("message %q does not say what is needed", first)
	}
}
