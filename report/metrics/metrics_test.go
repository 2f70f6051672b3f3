package metrics

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/internal/reporttest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// scrape GETs the handler's page as Prometheus would.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, body)
	}
	return string(body)
}

func hasLines(t *testing.T, page string, want ...string) {
	t.Helper()
	lines := strings.Split(page, "\n")
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("no line %q in the scrape", w)
		}
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, Options{MaxTopics: 2})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(report.Counters{
		Packets: 10, Bytes: 1000, Drops: 1, KernelPackets: 11, Gaps: 2,
		ProduceRequests: 7, ProduceResponses: 6, Batches: 9, Records: 90, Malformed: 1, Connections: 3,
		EvictedConnections: 1, EvictedBatches: 4, EvictedPending: 2,
		Topics: []report.TopicCount{
			{Topic: "test", Batches: 5, Records: 50},
			{Topic: "orders", Batches: 2, Records: 20},
			{Topic: "zzz", Batches: 1, Records: 10}, // beyond the bound
			{Topic: "yyy", Batches: 1, Records: 10},
		},
	})
	// A stage that started again: Packets went down. Nothing is taken
	// away, and the next growth counts from the new base.
	m.Update(report.Counters{Packets: 8, Bytes: 1000, Drops: 1, KernelPackets: 11,
		Topics: []report.TopicCount{{Topic: "test", Batches: 5, Records: 50}, {Topic: "zzz", Batches: 3, Records: 30}}})
	m.Update(report.Counters{Packets: 12, Bytes: 1500, Drops: 1, KernelPackets: 13,
		Topics: []report.TopicCount{{Topic: "test", Batches: 6, Records: 60}, {Topic: "zzz", Batches: 4, Records: 40}}})
	for _, f := range reporttest.Findings() {
		if err := m.Finding(f); err != nil {
			t.Fatal(err)
		}
	}
	m.ObserveProduceLatency("test", 0.0007)
	m.ObserveProduceLatency("test", 2)
	m.ObserveProduceLatency("elsewhere", 0.1) // beyond the bound
	m.ObserveProduceLatency("test", math.NaN())
	m.ObserveProduceLatency("test", -1)
	m2, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m2.ObserveProduceLatency("", 0.01)
	hasLines(t, scrape(t, m2.Handler()), `kdupcap_produce_latency_seconds_count{topic="_unknown"} 1`)
	if err := m.Summary(reporttest.Summary()); err != nil {
		t.Fatal(err)
	}

	page := scrape(t, m.Handler())
	hasLines(t, page,
		"# HELP kdupcap_packets_total Packets read from the capture.",
		"# TYPE kdupcap_packets_total counter",
		"kdupcap_packets_total 14", // 10, then 8 (ignored, new base), then 12 (+4)
		"kdupcap_captured_bytes_total 1500",
		"kdupcap_dropped_packets_total 1",
		"kdupcap_kernel_packets_total 13",
		"kdupcap_stream_gaps_total 2",
		"kdupcap_produce_requests_total 7",
		"kdupcap_produce_responses_total 6",
		"kdupcap_batches_total 9",
		"kdupcap_records_total 90",
		"kdupcap_malformed_frames_total 1",
		"kdupcap_connections_total 3",
		"kdupcap_evicted_connections_total 1",
		"kdupcap_evicted_batches_total 4",
		"kdupcap_evicted_pending_requests_total 2",
		`kdupcap_topic_batches_total{topic="test"} 6`,
		`kdupcap_topic_batches_total{topic="orders"} 2`,
		// _other sums the topics beyond the bound: 2 (zzz 1 + yyy 1),
		// then 3 (zzz alone), then 4.
		`kdupcap_topic_batches_total{topic="_other"} 4`,
		`kdupcap_topic_records_total{topic="_other"} 40`,
		`kdupcap_findings_total{verdict="duplicated"} 1`,
		`kdupcap_findings_total{verdict="deduplicated"} 1`,
		`kdupcap_findings_total{verdict="single"} 1`,
		`kdupcap_findings_total{verdict="unconfirmed"} 1`,
		`kdupcap_findings_total{verdict="rejected"} 0`,
		`kdupcap_topic_findings_total{topic="test",verdict="unconfirmed"} 1`,
		`kdupcap_topic_findings_total{topic="test",verdict="deduplicated"} 1`,
		`kdupcap_topic_findings_total{topic="orders",verdict="duplicated"} 1`,
		// The topic ID of the fourth finding came after the bound was reached.
		`kdupcap_topic_findings_total{topic="_other",verdict="single"} 1`,
		// Resends: 1 + 1 + 2 + 2.
		"kdupcap_resends_total 6",
		"kdupcap_duplicated_records_total 50",
		"# TYPE kdupcap_produce_latency_seconds histogram",
		`kdupcap_produce_latency_seconds_bucket{topic="test",le="0.0005"} 0`,
		`kdupcap_produce_latency_seconds_bucket{topic="test",le="0.001"} 1`,
		`kdupcap_produce_latency_seconds_bucket{topic="test",le="1"} 1`,
		`kdupcap_produce_latency_seconds_bucket{topic="test",le="2.5"} 2`,
		`kdupcap_produce_latency_seconds_bucket{topic="test",le="60"} 2`,
		`kdupcap_produce_latency_seconds_bucket{topic="test",le="+Inf"} 2`,
		`kdupcap_produce_latency_seconds_sum{topic="test"} 2.0007`,
		`kdupcap_produce_latency_seconds_count{topic="test"} 2`,
		`kdupcap_produce_latency_seconds_count{topic="_other"} 1`,
	)

	// The topic label never takes more than MaxTopics names and _other.
	topics := map[string]bool{}
	for line := range strings.SplitSeq(page, "\n") {
		if _, rest, ok := strings.Cut(line, `topic="`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			topics[name] = true
		}
	}
	if len(topics) != 3 || !topics["test"] || !topics["orders"] || !topics[OtherTopic] {
		t.Errorf("topic labels %v, want test, orders and %s", topics, OtherTopic)
	}

	// Names, HELP and units pass Prometheus's own linter.
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestMetricsNeverDecrease feeds totals that go up and down at random and
// checks every counter against the sum of the rises.
func TestMetricsNeverDecrease(t *testing.T) {
	m, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seq := []int64{0, 5, 5, 3, 10, 0, 0, 7, 100, 99, 101}
	var want, prev, last int64
	for _, n := range seq {
		m.Update(report.Counters{Packets: n, Topics: []report.TopicCount{{Topic: "t", Records: n}}})
		if n > last {
			want += n - last
		}
		last = n
		got := int64(testutil.ToFloat64(m.totals[0].c))
		if got != want || got < prev {
			t.Fatalf("after %d: packets %d, want %d (was %d)", n, got, want, prev)
		}
		if r := int64(testutil.ToFloat64(m.topicRecords.WithLabelValues("t"))); r != want {
			t.Fatalf("after %d: topic records %d, want %d", n, r, want)
		}
		prev = got
	}
}

func TestMetricsTopicBound(t *testing.T) {
	for _, max := range []int{0, 1, 5} {
		t.Run(strconv.Itoa(max), func(t *testing.T) {
			m, err := New(nil, Options{MaxTopics: max})
			if err != nil {
				t.Fatal(err)
			}
			bound := max
			if bound <= 0 {
				bound = defaultMaxTopics
			}
			var tcs []report.TopicCount
			for i := range 3 * bound {
				topic := "t" + strconv.Itoa(i)
				tcs = append(tcs, report.TopicCount{Topic: topic, Batches: 1})
				m.ObserveProduceLatency(topic, 0.01)
				f := reporttest.Findings()[0]
				f.Topic = topic
				if err := m.Finding(f); err != nil {
					t.Fatal(err)
				}
			}
			m.Update(report.Counters{Topics: tcs})
			for name, vec := range map[string]prometheus.Collector{
				"batches": m.topicBatches, "latency": m.latency, "findings": m.topicFinds,
			} {
				if n := testutil.CollectAndCount(vec); n != bound+1 {
					t.Errorf("%s: %d series, want %d", name, n, bound+1)
				}
			}
			if got := testutil.ToFloat64(m.topicBatches.WithLabelValues(OtherTopic)); got != float64(2*bound) {
				t.Errorf("_other batches %v, want %d", got, 2*bound)
			}
		})
	}
}

func TestMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, Options{}); err == nil || !strings.HasPrefix(err.Error(), "report: ") {
		t.Errorf("second registration: %v", err)
	}
}

// TestMetricsOtherRegisterer: with a Registerer that cannot gather, the
// handler still serves these metrics.
func TestMetricsOtherRegisterer(t *testing.T) {
	m, err := New(prometheus.WrapRegistererWithPrefix("x_", prometheus.NewRegistry()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(report.Counters{Packets: 3})
	hasLines(t, scrape(t, m.Handler()), "kdupcap_packets_total 3")
}

// TestMetricsConcurrent runs the pipeline's calls beside scrapes (go test
// -race checks it).
func TestMetricsConcurrent(t *testing.T) {
	m, err := New(nil, Options{MaxTopics: 3})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				switch g {
				case 0:
					m.Update(report.Counters{Packets: int64(i), Topics: []report.TopicCount{{Topic: "t" + strconv.Itoa(i%7), Batches: int64(i)}}})
				case 1:
					_ = m.Finding(reporttest.Findings()[i%4])
				case 2:
					m.ObserveProduceLatency("t"+strconv.Itoa(i%5), float64(i)/1000)
				case 3:
					if i%20 == 0 {
						h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
					}
				}
			}
		})
	}
	wg.Wait()
	if n := testutil.CollectAndCount(m.latency); n > 4 {
		t.Errorf("%d latency series, want at most 4", n)
	}
	if n := testutil.ToFloat64(m.findings.WithLabelValues(string(detect.Duplicated))); n != 50 {
		t.Errorf("%v duplicated findings, want 50", n)
	}
}
