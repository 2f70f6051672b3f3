package metrics

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configures New.
type Options struct {
	// MaxTopics bounds the distinct values of the topic label: the first
	// MaxTopics topics seen keep their name, every later one is counted
	// under OtherTopic. 0 or less means 100.
	MaxTopics int
}

// OtherTopic is the topic label of every topic beyond MaxTopics.
const OtherTopic = "_other"

// UnknownTopic is the topic label of an empty topic name (a request that
// named its topic by an ID no Metadata response resolved, when the caller
// passes no ID).
const UnknownTopic = "_unknown"

const defaultMaxTopics = 100

// verdicts are the verdicts a finding can have: each shows from the start,
// at 0.
var verdicts = detect.Verdicts()

// latencyBuckets are the upper bounds, in seconds, of the produce latency
// histogram: from half a millisecond (a broker on the same host) to a
// minute (past any default request timeout).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Exporter exports a live run as Prometheus metrics, all named kdupcap_*.
// As a report.Writer it counts findings: findings_total{verdict},
// topic_findings_total{topic,verdict}, resends_total (attempts after the
// first) and duplicated_records_total (extra copies in the log). Update
// turns the stages' running totals into packets_total, captured_bytes_total,
// kernel_packets_total, dropped_packets_total, stream_gaps_total,
// produce_requests_total, produce_responses_total, batches_total,
// records_total, malformed_frames_total, connections_total,
// evicted_connections_total, evicted_batches_total,
// evicted_pending_requests_total, topic_batches_total{topic} and
// topic_records_total{topic}. ObserveProduceLatency feeds the histogram
// produce_latency_seconds{topic}, with buckets from 0.5ms to 60s. Its
// methods are safe for concurrent use, so a scrape may run while the
// pipeline writes.
type Exporter struct {
	gatherer prometheus.Gatherer

	findings     *prometheus.CounterVec // verdict
	resends      prometheus.Counter
	revisions    prometheus.Counter
	dupRecords   prometheus.Counter
	topicFinds   *prometheus.CounterVec // topic, verdict
	topicBatches *prometheus.CounterVec // topic
	topicRecords *prometheus.CounterVec // topic
	latency      *prometheus.HistogramVec

	mu        sync.Mutex
	maxTopics int
	topics    map[string]*topicState // names with their own label, at most maxTopics
	other     topicState             // the sum over every topic beyond maxTopics
	totals    []total
}

// topicState is the last cumulative counts Update saw of one topic label.
type topicState struct {
	batches, records int64
}

// total is one counter fed from a field of report.Counters.
type total struct {
	c    prometheus.Counter
	get  func(*report.Counters) int64
	last int64
}

// New creates the metrics and registers them with reg. A nil reg
// means a new registry of these metrics only. Handler serves reg when it is
// also a prometheus.Gatherer (as a *prometheus.Registry is), so that other
// collectors registered there are served too; else these metrics only. It
// fails when a metric of the same name is already registered.
func New(reg prometheus.Registerer, opts Options) (*Exporter, error) {
	own := prometheus.NewRegistry()
	if reg == nil {
		reg = own
	}
	m := &Exporter{
		gatherer:  own,
		maxTopics: opts.MaxTopics,
		topics:    make(map[string]*topicState),
	}
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	if m.maxTopics <= 0 {
		m.maxTopics = defaultMaxTopics
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kdupcap", Name: name, Help: help})
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kdupcap", Name: name, Help: help}, labels)
	}
	m.findings = counterVec("findings_total", "Record batches sent more than once, by verdict (what the log holds of them).", "verdict")
	m.resends = counter("resends_total", "Produce attempts after the first of each batch sent more than once.")
	m.revisions = counter("finding_revisions_total", "Findings reported again because another attempt of the batch came after the first report (live).")
	m.dupRecords = counter("duplicated_records_total", "Extra copies of records in the log: the records of each duplicated batch times the copies beyond the first.")
	m.topicFinds = counterVec("topic_findings_total", "Record batches sent more than once, by topic and verdict (topics beyond the label bound count as _other).", "topic", "verdict")
	m.topicBatches = counterVec("topic_batches_total", "Record batches in produce requests, by topic (topics beyond the label bound count as _other).", "topic")
	m.topicRecords = counterVec("topic_records_total", "Records in produce requests, by topic (topics beyond the label bound count as _other).", "topic")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "kdupcap", Name: "produce_latency_seconds",
		Help:    "Time from a produce request to its response, by topic (topics beyond the label bound count as _other).",
		Buckets: latencyBuckets,
	}, []string{"topic"})

	field := func(name, help string, get func(*report.Counters) int64) {
		m.totals = append(m.totals, total{c: counter(name, help), get: get})
	}
	field("packets_total", "Packets read from the capture.", func(c *report.Counters) int64 { return c.Packets })
	field("captured_bytes_total", "Captured bytes of the packets read.", func(c *report.Counters) int64 { return c.Bytes })
	field("kernel_packets_total", "Packets the kernel handed to the capture socket, dropped ones included.", func(c *report.Counters) int64 { return c.KernelPackets })
	field("dropped_packets_total", "Packets the kernel dropped because the capture ring was full: never analyzed.", func(c *report.Counters) int64 { return c.Drops })
	field("stream_gaps_total", "Holes in TCP streams (bytes the capture missed).", func(c *report.Counters) int64 { return c.Gaps })
	field("produce_requests_total", "Produce requests decoded.", func(c *report.Counters) int64 { return c.ProduceRequests })
	field("produce_responses_total", "Produce responses decoded.", func(c *report.Counters) int64 { return c.ProduceResponses })
	field("batches_total", "Record batches in produce requests.", func(c *report.Counters) int64 { return c.Batches })
	field("records_total", "Records in produce requests.", func(c *report.Counters) int64 { return c.Records })
	field("malformed_frames_total", "Kafka frames that did not decode.", func(c *report.Counters) int64 { return c.Malformed })
	field("connections_total", "Kafka connections seen.", func(c *report.Counters) int64 { return c.Connections })
	field("evicted_connections_total", "Idle connections forgotten to bound memory.", func(c *report.Counters) int64 { return c.EvictedConnections })
	field("evicted_batches_total", "Batch fingerprints forgotten to bound memory: a later resend of one goes unseen.", func(c *report.Counters) int64 { return c.EvictedBatches })
	field("evicted_pending_requests_total", "Produce requests forgotten before their response to bound memory.", func(c *report.Counters) int64 { return c.EvictedPending })

	cs := []prometheus.Collector{m.findings, m.resends, m.revisions, m.dupRecords, m.topicFinds, m.topicBatches, m.topicRecords, m.latency}
	for _, t := range m.totals {
		cs = append(cs, t.c)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("report: registering metrics: %w", err)
		}
		if reg != own {
			if err := own.Register(c); err != nil {
				return nil, fmt.Errorf("report: registering metrics: %w", err)
			}
		}
	}
	// Every verdict shows from the start, at 0.
	for _, v := range verdicts {
		m.findings.WithLabelValues(string(v))
	}
	return m, nil
}

// Handler serves the metrics in the Prometheus text format.
func (m *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Finding counts f.
func (m *Exporter) Finding(f detect.Finding) error {
	if f.Revision > 0 {
		// A batch reported before and sent again: counted once, as first
		// reported; the revision is counted on its own.
		m.revisions.Inc()
		return nil
	}
	verdict := strings.ToValidUTF8(string(f.Verdict), "\uFFFD")
	m.findings.WithLabelValues(verdict).Inc()
	if n := len(f.Attempts); n > 1 {
		m.resends.Add(float64(n - 1))
	}
	if f.Verdict == detect.Duplicated && len(f.AppendedOffsets) > 1 && f.NumRecords > 0 {
		m.dupRecords.Add(float64(int64(f.NumRecords) * int64(len(f.AppendedOffsets)-1)))
	}
	m.mu.Lock()
	topic := m.topicLabel(report.TopicName(&f))
	m.mu.Unlock()
	m.topicFinds.WithLabelValues(topic, verdict).Inc()
	return nil
}

// Summary does nothing: the counters already hold what a summary says.
func (m *Exporter) Summary(report.Summary) error { return nil }

// Update adds to each counter what the matching total in c grew by since
// the last Update. A total smaller than before (a stage that started
// again) adds nothing and becomes the base of the next delta, so a counter
// never goes down.
func (m *Exporter) Update(c report.Counters) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.totals {
		t := &m.totals[i]
		t.last = addDelta(t.c, t.last, t.get(&c))
	}
	var other topicState
	seen := false
	for _, tc := range c.Topics {
		name := m.topicLabel(tc.Topic)
		if name == OtherTopic {
			other.batches += tc.Batches
			other.records += tc.Records
			seen = true
			continue
		}
		st := m.topics[name]
		st.batches = addDelta(m.topicBatches.WithLabelValues(name), st.batches, tc.Batches)
		st.records = addDelta(m.topicRecords.WithLabelValues(name), st.records, tc.Records)
	}
	if seen {
		m.other.batches = addDelta(m.topicBatches.WithLabelValues(OtherTopic), m.other.batches, other.batches)
		m.other.records = addDelta(m.topicRecords.WithLabelValues(OtherTopic), m.other.records, other.records)
	}
}

// ObserveProduceLatency records the time from one produce request to its
// response. A negative, infinite or NaN value is ignored.
func (m *Exporter) ObserveProduceLatency(topic string, seconds float64) {
	if seconds < 0 || math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return
	}
	m.mu.Lock()
	name := m.topicLabel(topic)
	m.mu.Unlock()
	m.latency.WithLabelValues(name).Observe(seconds)
}

// topicLabel is the label of topic: its printable name (UnknownTopic when
// empty) while fewer than maxTopics names have a label, else OtherTopic.
// m.mu is held.
func (m *Exporter) topicLabel(topic string) string {
	name := UnknownTopic
	if topic != "" {
		name = report.Printable(topic)
	}
	if _, ok := m.topics[name]; ok {
		return name
	}
	if len(m.topics) >= m.maxTopics || name == OtherTopic {
		return OtherTopic
	}
	m.topics[name] = &topicState{}
	return name
}

// addDelta adds now-last to c when it is positive and returns the new base.
func addDelta(c prometheus.Counter, last, now int64) int64 {
	if now > last {
		c.Add(float64(now - last))
	}
	return now
}
