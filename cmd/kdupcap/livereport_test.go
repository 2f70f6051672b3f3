package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
	"github.com/kdupcap/kdupcap/internal/testenv"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/html"
)

// TestLiveReportHandler: /report answers with the page the run's
// goroutine prepares, reuses a page drawn less than reportReuse ago, and
// answers 503 when the run does not answer in time or has ended, 405 to
// what is not GET or HEAD.
func TestLiveReportHandler(t *testing.T) {
	st := html.NewStore(html.StoreOptions{})
	for i := range 3 {
		if err := st.Finding(detect.Finding{ID: uint64(i + 1), Verdict: detect.Duplicated, Topic: "t", NumRecords: 1}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		method   string
		answers  bool // the run answers
		ended    bool
		reuse    time.Duration
		requests int
		wantCode int
		wantBody string
		prepared int64 // pages the run prepared
	}{
		{"page", http.MethodGet, true, false, time.Hour, 1, http.StatusOK, `<dd id="n-findings">3</dd>`, 1},
		{"head", http.MethodHead, true, false, time.Hour, 1, http.StatusOK, "", 1},
		{"reused", http.MethodGet, true, false, time.Hour, 3, http.StatusOK, `<dd id="n-findings">3</dd>`, 1},
		{"not reused", http.MethodGet, true, false, 0, 3, http.StatusOK, `<dd id="n-findings">3</dd>`, 3},
		{"run does not answer", http.MethodGet, false, false, time.Hour, 1, http.StatusServiceUnavailable, "did not answer in time", 0},
		{"run ended", http.MethodGet, true, true, time.Hour, 1, http.StatusServiceUnavailable, "has ended", 0},
		{"post", http.MethodPost, true, false, time.Hour, 1, http.StatusMethodNotAllowed, "answers GET", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLiveReport(st)
			lr.wait, lr.reuse = 300*time.Millisecond, tt.reuse
			if tt.ended {
				lr.end()
			}
			var prepared atomic.Int64
			prepare := func(w io.Writer) (*html.Writer, report.Summary, error) {
				prepared.Add(1)
				hw, err := st.Page(w)
				return hw, report.Summary{Files: []string{"live:lo"}, Findings: 3, ByVerdict: map[string]int64{"duplicated": 3}}, err
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the run's read loop
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if tt.answers {
						lr.answer(prepare)
					}
				}
			}()
			defer func() { close(stop); <-done }()
			for i := range tt.requests {
				rec := httptest.NewRecorder()
				lr.ServeHTTP(rec, httptest.NewRequest(tt.method, "/report", nil))
				if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
					t.Fatalf("request %d: %d %.200q, want %d with %q", i, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
				}
				if ct := rec.Header().Get("Content-Type"); tt.wantCode == http.StatusOK && ct != "text/html; charset=utf-8" {
					t.Errorf("Content-Type %q", ct)
				}
			}
			if got := prepared.Load(); got != tt.prepared {
				t.Errorf("the run prepared %d pages, want %d", got, tt.prepared)
			}
		})
	}
}

// TestLiveReport sniffs the loopback while a real kgo producer writes to a
// kfake broker that answers REQUEST_TIMED_OUT after the append, with
// --metrics on a port of its choosing: /report is served from the start,
// and once the findings are printed it shows each of them once, with the
// numbers that live's JSON output gives for them: findings per verdict,
// records held twice, extra copies, each finding's attempts.
func TestLiveReport(t *testing.T) {
	testenv.Root(t)
	tests := []struct {
		name   string
		fault  kafkatest.Fault
		settle string
		// revised: a finding is reported, then again with its next
		// attempt (a short --settle reports it before the client's retry).
		revised bool
	}{
		{"findings", kafkatest.Fault{Action: kafkatest.TimedOutAfterAppend, Every: 3, Max: 2}, "2s", false},
		{"revised", kafkatest.Fault{Action: kafkatest.TimedOutAfterAppend, Every: 1, Max: 2}, "10ms", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testLiveReport(t, tt.fault, tt.settle, tt.revised) })
	}
}

func testLiveReport(t *testing.T, fault kafkatest.Fault, settle string, revised bool) {
	const topic = "live-report"
	broker, err := kafkatest.NewCluster([]kafkatest.Fault{fault}, kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	args := []string{"-i", "lo", "--port", strconv.Itoa(broker.Port()), "--format", "json", "--records", "5",
		"--metrics", "127.0.0.1:0", "--settle", settle, "--duration", "60s"}
	go func() { done <- runLive(ctx, args, &stdout, &stderr) }()
	urlRE := regexp.MustCompile(`report on (http://\S+/report)\n`)
	var url string
	if !waitFor(10*time.Second, func() bool {
		m := urlRE.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}) {
		cancel()
		t.Fatalf("live did not say where its report is: %s", stderr.String())
	}
	fetch := func() []byte {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: %s %q (%v): %.300s", url, resp.Status, resp.Header.Get("Content-Type"), err, b)
		}
		return b
	}
	if got := readPage(t, fetch()).numbers["n-findings"]; got != "0" {
		t.Errorf("page before any finding: %s findings", got)
	}

	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := kafkatest.Produce(pctx, broker.Addr(), topic, kafkatest.Producer{
		ClientID: "kgo-live-report", ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 2 * time.Second, Partitions: 2, PerRequest: 1,
	}, kafkatest.Values("live-report", 9)); err != nil {
		t.Fatalf("produce: %v", err)
	}
	events := broker.Events()
	if len(events) == 0 {
		t.Fatal("harness: no fault injected")
	}
	// One finding per fault, or per faulted batch when its retry was
	// faulted too.
	wantFindings := len(events)
	if revised {
		wantFindings = 1
	}
	if !waitFor(10*time.Second, func() bool { return len(liveFindings(t, stdout.String())) >= wantFindings }) {
		t.Fatalf("while running: %d findings, want %d (faults %+v)", len(liveFindings(t, stdout.String())), wantFindings, events)
	}
	if revised && !waitFor(10*time.Second, func() bool { return strings.Contains(stdout.String(), `"revision":1`) }) {
		t.Fatalf("no finding was revised: %s", stdout.String())
	}
	// A page drawn after the findings were printed (not one reused).
	time.Sleep(reportReuse)
	b := fetch()
	printed := liveFindings(t, stdout.String())
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("live exited %d: %s", code, stderr.String())
	}
	t.Logf("page of %d findings: %d bytes; numbers %v, attempts %v", len(printed), len(b), readPage(t, b).numbers, readPage(t, b).attempts)

	got := readPage(t, b)
	want := readJSON(t, []byte(stdout.String())) // the summary's numbers
	final := liveFindings(t, stdout.String())
	if len(final) != len(printed) {
		t.Fatalf("%d findings printed when the page was fetched, %d at the end: the run was not quiet", len(printed), len(final))
	}
	for k, v := range want.numbers {
		if got.numbers[k] != v {
			t.Errorf("%s: page %q, JSON %q", k, got.numbers[k], v)
		}
	}
	if n := bytes.Count(b, []byte(`<details class="finding"`)); n != len(printed) {
		t.Errorf("%d findings drawn, %d printed", n, len(printed))
	}
	if len(got.attempts) != len(printed) {
		t.Fatalf("findings drawn up to #%d, %d printed", len(got.attempts), len(printed))
	}
	for i, f := range printed {
		if got.attempts[i] != f.attempts {
			t.Errorf("finding %d: %d attempts drawn, the JSON's latest report %d", i+1, got.attempts[i], f.attempts)
		}
	}
	if !bytes.Contains(b, []byte("live:lo")) {
		t.Error("the page does not name the interface")
	}
}

// printedFinding is a finding of live's JSON output, as of its latest
// report.
type printedFinding struct {
	key      string
	verdict  string
	attempts int
}

// liveFindings reads live's JSON Lines: the findings in the order first
// reported, each as of its latest report (a revision names its finding by
// its first attempt and batch: the JSON has no finding ID).
func liveFindings(t *testing.T, out string) []printedFinding {
	t.Helper()
	var fs []printedFinding
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l struct {
			Type      string `json:"type"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			CRC       string `json:"batch_crc"`
			Verdict   string `json:"verdict"`
			Revision  int    `json:"revision"`
			Omitted   int    `json:"attempts_omitted"`
			Attempts  []struct {
				ConnID        uint64 `json:"conn_id"`
				CorrelationID int32  `json:"correlation_id"`
			} `json:"attempts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// A line being written as the test reads.
			continue
		}
		if l.Type == "summary" || l.Type == "producer" || len(l.Attempts) == 0 {
			continue
		}
		f := printedFinding{key: fmt.Sprintf("%s/%d %s %d/%d", l.Topic, l.Partition, l.CRC, l.Attempts[0].ConnID, l.Attempts[0].CorrelationID),
			verdict: l.Verdict, attempts: len(l.Attempts) + l.Omitted}
		if l.Revision == 0 {
			fs = append(fs, f)
			continue
		}
		i := len(fs) - 1
		for i >= 0 && fs[i].key != f.key {
			i--
		}
		if i < 0 {
			t.Fatalf("revision %d of no finding printed: %s", l.Revision, sc.Text())
		}
		fs[i] = f
	}
	return fs
}
