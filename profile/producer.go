package profile

import (
	"cmp"
	"github.com/kdupcap/kdupcap/internal/fifo"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultMaxProducers bounds the producers a Profiler profiles when
// Options.MaxProducers is 0.
const DefaultMaxProducers = 4096

// DefaultMaxPending bounds the findings a Profiler keeps revisable when
// Options.MaxPending is 0: about 300 bytes each (measured by
// BenchmarkProfilerFinding), 5 MB at most. A quarter of
// detect.DefaultMaxBatches: a live run with more findings reported within
// Window plus Settle (25 a second over the default 10 minutes) is in a
// storm of re-sends, and the oldest reported are tallied early; only a
// later report of one of those would then count it twice.
const DefaultMaxPending = detect.DefaultMaxBatches / 4

// Bounds on what one producer profile lists: a producer uses one value of
// each setting, so more are a sign of junk and are not kept.
const (
	maxProfileValues  = 8
	maxProfileBrokers = 64
)

// Producer is what the capture shows of one producer, keyed by client IP,
// client.id and producer ID: the settings read off the wire, the produce
// latency per broker, and what its re-sends did, with a diagnosis.
type Producer struct {
	ClientIP   netip.Addr
	ClientID   *string // nil: null client.id
	ProducerID int64   // -1: not idempotent
	// Idempotent is ProducerID >= 0.
	Idempotent bool
	// TransactionalIDs are the distinct transactional.ids of its requests.
	TransactionalIDs []string
	// SoftwareName and SoftwareVersion come from its ApiVersions v3+
	// requests (KIP-511); empty when none was captured.
	SoftwareName, SoftwareVersion string
	// LibrdkafkaVersion is the librdkafka version a librdkafka client or
	// wrapper carries (confluent-kafka-go, -python, -dotnet), read off
	// SoftwareVersion; empty for any other client.
	LibrdkafkaVersion string
	// SoftwareGuess is, when no software name was captured, the client
	// its client.id and API versions suggest ("kafkajs", "kafka-go"), a
	// guess and never a certainty; InferredFrom says what it rests on
	// (`client.id "kafkajs", ApiVersions v2 and Produce v7`). Both empty
	// when SoftwareName is set or nothing suggests a client.
	SoftwareGuess, InferredFrom string
	// ApiVersions are the distinct versions of the ApiVersions requests
	// its connections sent before their first ProduceRequest (the
	// highest of each connection), ascending; ProduceVersions those of its
	// ProduceRequests.
	ApiVersions, ProduceVersions []int16
	// SASLUsers are the distinct SASL users its connections authenticated
	// as (decode.ConnInfo.SASLUser), ascending; none without SASL, or
	// when the mechanism does not show the user.
	SASLUsers []string

	// Acks and TimeoutsMillis are the distinct acks and request timeouts of
	// its ProduceRequests, ascending (one each, unless it changed).
	Acks           []int16
	TimeoutsMillis []int32
	// MaxInFlight is the most of its ProduceRequests seen awaiting a
	// response at once on one connection; 0 when none awaited one (acks=0).
	MaxInFlight int
	// Codecs are the compression codecs of its batches: none, gzip,
	// snappy, lz4, zstd (or codec-N).
	Codecs []string

	Requests int64 // ProduceRequests
	Sends    int64 // batches sent, re-sends included
	Batches  int64 // distinct batches: Sends less the re-sends found
	// RecordsMean and RecordsMax are the records per batch sent.
	RecordsMean float64
	RecordsMax  int32

	// Latency holds, per broker, the produce latency of the answered
	// requests (request to response packet time), ordered by broker;
	// Overall is the same over every broker (its Broker is zero).
	Latency []BrokerLatency
	Overall BrokerLatency

	// Resent is the number of batches sent more than once (findings),
	// Resends the attempts after the first of them.
	Resent, Resends int64
	// ByVerdict counts those batches by finding verdict.
	ByVerdict map[detect.Verdict]int64
	// MostCopies is the most distinct offsets one duplicated batch was
	// appended at.
	MostCopies int
	// Renumbered counts the record-level findings whose records this
	// idempotent producer sent again under another epoch or producer ID
	// (detect.Finding.ProducerChange), which the broker cannot
	// deduplicate; Changes says how, most first (at most 8 kinds).
	Renumbered int64
	Changes    []ChangeCount
	// Causes counts the re-sends by cause (and broker error), most first.
	Causes []CauseCount
	// Unretried counts batches answered with a retriable error that were
	// never sent again, by error, most first; only when the producer sent
	// a request after the last such answer (else the capture may simply
	// have ended before the retries).
	Unretried []ErrorCount

	// Diagnosis says in plain words why it re-sent and what would have
	// prevented the duplicates, each statement backed by the numbers
	// above; empty when there is nothing to say (no re-send, no acks=0,
	// no unretried error).
	Diagnosis string

	first time.Time // first request seen, for ordering
	order int       // order first seen
}

// BrokerLatency is the produce latency of one producer to one broker.
type BrokerLatency struct {
	Broker netip.AddrPort
	// Answered requests, and their latency quantiles and maximum, in ms.
	Answered                        int64
	P50Millis, P99Millis, MaxMillis float64
	// Succeeded: the answered requests with no error for any partition,
	// and their latency quantiles, in ms: how fast the broker appends and
	// replicates when it does not time out.
	Succeeded          int64
	SucceededP50Millis float64
	SucceededP99Millis float64
	// Histogram is the latency of the answered requests in bars of one
	// octave (Sketch.Histogram); nil when none was answered.
	Histogram []HistogramBin
	all, ok   *Sketch
}

// CauseCount counts the re-sends of one cause.
type CauseCount struct {
	Cause detect.Cause
	// Error is detect.Attempt.CauseError: the broker error for
	// CauseBrokerError, how the connection of the attempt before ended
	// ("client FIN", "broker RST") for CauseClientTimeout,
	// CauseConnectionClosed and CauseAnswerLost when the capture shows it,
	// else empty.
	Error string
	Count int64
	// MinGapMillis and MaxGapMillis bound the time from the attempt
	// before to the re-send.
	MinGapMillis, MaxGapMillis float64
	// Ended counts the re-sends whose attempt before has the time of its
	// connection's end (detect.Attempt.End); for them, MinEndMillis and
	// MaxEndMillis bound the time from that attempt (from its answer, for
	// CauseAnswerLost) to the end, MinAfterEndMillis and MaxAfterEndMillis
	// the time from the end to the re-send. All zero when Ended is 0.
	Ended                                int64
	MinEndMillis, MaxEndMillis           float64
	MinAfterEndMillis, MaxAfterEndMillis float64
}

// ChangeCount counts the record-level findings of an idempotent producer
// whose records were sent again under another epoch or producer ID, by how
// the producer changed and what the re-send that changed followed.
type ChangeCount struct {
	Change detect.ProducerChange
	// ProducerID and Epoch are the first attempt's, ToProducerID and
	// ToEpoch those of the first attempt sent under another.
	ProducerID, ToProducerID int64
	Epoch, ToEpoch           int16
	// Cause and Error are the cause of that attempt (its CauseError).
	Cause detect.Cause
	Error string
	// Count counts the findings; Duplicated those whose verdict is
	// detect.Duplicated.
	Count, Duplicated int64
}

// ErrorCount counts batches answered with one error.
type ErrorCount struct {
	Error string
	Count int64
}

// Options configure a Profiler.
type Options struct {
	// MaxProducers bounds the producers profiled; the exchanges of any
	// further producer are only counted (Profiler.Omitted). 0 means
	// DefaultMaxProducers.
	MaxProducers int
	// Revisable is how long after its last attempt (or answer) a finding
	// handed to Finding may still be reported again: a live Detector's
	// Window plus its Settle. Until then the finding's share of its
	// producer's tally is replaced by a later report of it; after that it
	// is tallied for good. 0: findings are never reported again (a
	// Detector without Live), each is tallied for good at once.
	Revisable time.Duration
	// MaxPending bounds the findings kept revisable; beyond it those
	// reported longest ago are tallied for good early (a Detector reports
	// again only a batch it still remembers, no more than its MaxBatches,
	// and evicts the batch touched least recently). 0 means
	// DefaultMaxPending.
	MaxPending int
	// TimelineBuckets is the number of buckets of the Timeline; 0 means
	// DefaultTimelineBuckets.
	TimelineBuckets int
}

// ProducerKey identifies a producer: its client's IP address, client.id
// and producer ID (-1 when it has none), as a Profiler profiles one
// producer per key. It is comparable: other packages that count per
// producer (package report's headline) key their maps by it.
type ProducerKey struct {
	ClientIP netip.Addr
	// ClientID is the client.id; NullClientID tells a null one from "".
	ClientID     string
	NullClientID bool
	ProducerID   int64
}

// producerState is what a Profiler keeps of one producer: a fixed set of
// counters and, per broker, two fixed-size sketches.
type producerState struct {
	p        Producer
	codecs   uint32 // bit per codec 0..7
	records  int64
	errSends map[string]int64 // batch sends answered with a retriable error
	// lastRequest is the latest request time, lastError the latest time
	// of an answer with a retriable error: unretried errors are told only
	// when the producer went on sending after the last of them.
	lastRequest, lastError time.Time
	// retried holds the sends answered with a retriable error that some
	// finding shows were sent again (by bytes, sequence or records; in
	// several findings, counted once), retriedBy their number by error:
	// batches not among them are unretried.
	retried   map[sendKey]struct{}
	retriedBy map[string]int64
	// tally is what the findings tallied for good say of its re-sends.
	tally tally
}

// Profiler builds a Producer profile per producer from the exchanges it is
// handed (Produce, which satisfies decode.Sink) and every report of the
// findings of the same run (Finding), as they come: a live run's findings
// are reported, and revised, while it goes on, and are not kept. Its memory
// is bounded by MaxProducers profiles of fixed size each and MaxPending
// findings still revisable, whatever the length of the capture. It is not
// safe for concurrent use.
type Profiler struct {
	max     int
	m       map[ProducerKey]*producerState
	omitted int64

	// Findings still revisable (tally.go), by Finding.ID, and the
	// order they were reported in.
	revisable  int64 // ns; 0: none is
	maxPending int
	pending    map[uint64]pendingFinding
	queue      fifo.Queue[reportRef]
	seq        uint32
	newest     int64            // newest packet time seen, Unix ns
	verdicts   []detect.Verdict // the verdicts of findings seen (verdictCode)

	// tl is the produce latency per broker over capture time of every
	// answered exchange, of every producer (those beyond max too).
	tl *Timeline
}

// New returns an empty Profiler.
func New(opts Options) *Profiler {
	if opts.MaxProducers <= 0 {
		opts.MaxProducers = DefaultMaxProducers
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	return &Profiler{max: opts.MaxProducers, m: make(map[ProducerKey]*producerState),
		revisable: int64(max(opts.Revisable, 0)), maxPending: opts.MaxPending,
		pending: make(map[uint64]pendingFinding), newest: math.MinInt64,
		tl: NewTimeline(opts.TimelineBuckets)}
}

// Timeline returns a copy of the produce latency per broker over capture
// time of every answered exchange handed to Produce.
func (pr *Profiler) Timeline() *Timeline { return pr.tl.Clone() }

// Omitted counts the exchanges of producers beyond MaxProducers.
func (pr *Profiler) Omitted() int64 { return pr.omitted }

// KeyOf is the key of the producer at ip with clientID (nil when null)
// and producerID: that of an exchange, a finding or a Producer.
func KeyOf(ip netip.Addr, clientID *string, producerID int64) ProducerKey {
	k := ProducerKey{ClientIP: ip, ProducerID: producerID, NullClientID: clientID == nil}
	if clientID != nil {
		k.ClientID = *clientID
	}
	return k
}

// Produce counts one exchange. It reads x only during the call.
func (pr *Profiler) Produce(x *decode.Exchange) {
	pr.seen(x.RequestTime)
	if x.Responded {
		pr.seen(x.ResponseTime)
	}
	var ip netip.Addr
	if x.Conn != nil {
		ip = x.Conn.Client.Addr()
		if x.Responded {
			pr.tl.Add(x.Conn.Broker, x.RequestTime, x.ResponseTime.Sub(x.RequestTime))
		}
	}
	pid := int64(-1)
	if len(x.Batches) > 0 {
		pid = x.Batches[0].ProducerID
	}
	k := KeyOf(ip, x.ClientID, pid)
	s := pr.m[k]
	if s == nil {
		if len(pr.m) >= pr.max {
			pr.omitted++
			return
		}
		s = &producerState{p: Producer{ClientIP: ip, ProducerID: pid, Idempotent: pid >= 0,
			first: x.RequestTime, order: len(pr.m), ByVerdict: map[detect.Verdict]int64{}}}
		if x.ClientID != nil {
			id := *x.ClientID
			s.p.ClientID = &id
		}
		pr.m[k] = s
	}
	p := &s.p
	if x.Conn != nil && x.Conn.ClientSoftwareName != "" {
		p.SoftwareName, p.SoftwareVersion = x.Conn.ClientSoftwareName, x.Conn.ClientSoftwareVersion
	}
	if x.Conn != nil && x.Conn.ApiVersionsSent {
		p.ApiVersions = addDistinct(p.ApiVersions, x.Conn.ApiVersionsVersion)
	}
	p.ProduceVersions = addDistinct(p.ProduceVersions, x.Version)
	if x.Conn != nil && x.Conn.SASLUser != "" {
		p.SASLUsers = addDistinct(p.SASLUsers, x.Conn.SASLUser)
	}
	p.Requests++
	p.Acks = addDistinct(p.Acks, x.Acks)
	p.TimeoutsMillis = addDistinct(p.TimeoutsMillis, x.TimeoutMillis)
	if x.TransactionalID != nil {
		p.TransactionalIDs = addDistinct(p.TransactionalIDs, *x.TransactionalID)
	}
	p.MaxInFlight = max(p.MaxInFlight, x.InFlight)
	if x.RequestTime.After(s.lastRequest) {
		s.lastRequest = x.RequestTime
	}
	ok := x.Responded
	for i := range x.Batches {
		b := &x.Batches[i]
		p.Sends++
		s.codecs |= 1 << (b.Attributes & 0x7)
		if b.NumRecords > 0 {
			s.records += int64(b.NumRecords)
			p.RecordsMax = max(p.RecordsMax, b.NumRecords)
		}
		if r := b.Response; r != nil && r.ErrorCode != 0 {
			ok = false
			if kerr.IsRetriable(kerr.ErrorForCode(r.ErrorCode)) {
				if s.errSends == nil {
					s.errSends = make(map[string]int64)
				}
				s.errSends[decode.ErrorName(r.ErrorCode)]++
				if x.ResponseTime.After(s.lastError) {
					s.lastError = x.ResponseTime
				}
			}
		}
	}
	if x.Responded && x.Conn != nil {
		bl := p.broker(x.Conn.Broker)
		if bl == nil {
			return
		}
		d := x.ResponseTime.Sub(x.RequestTime)
		bl.all.Add(d)
		if ok {
			bl.ok.Add(d)
		}
	}
}

// broker returns the latency of broker, added if new, nil beyond
// maxProfileBrokers.
func (p *Producer) broker(addr netip.AddrPort) *BrokerLatency {
	for i := range p.Latency {
		if p.Latency[i].Broker == addr {
			return &p.Latency[i]
		}
	}
	if len(p.Latency) >= maxProfileBrokers {
		return nil
	}
	p.Latency = append(p.Latency, BrokerLatency{Broker: addr, all: new(Sketch), ok: new(Sketch)})
	return &p.Latency[len(p.Latency)-1]
}

// AcksText is the acks of p's requests as clients configure them, joined
// by "/": "all" for -1, "all/1" when it changed; empty when no request was
// seen.
func (p *Producer) AcksText() string {
	a := make([]string, len(p.Acks))
	for i, v := range p.Acks {
		a[i] = decode.AcksText(v)
	}
	return strings.Join(a, "/")
}

// addDistinct adds v to the ascending set s, up to maxProfileValues values.
func addDistinct[T cmp.Ordered](s []T, v T) []T {
	i, found := slices.BinarySearch(s, v)
	if found || len(s) >= maxProfileValues {
		return s
	}
	return slices.Insert(s, i, v)
}

// Producers returns a profile per producer, in the order first seen, with
// what the findings handed to Finding say of its re-sends (the latest
// report of each) and its Diagnosis. It changes nothing: a second call
// returns the same.
func (pr *Profiler) Producers() []Producer {
	// The tallies for good, with the findings still revisable added.
	merged := make(map[*producerState]*tally)
	for _, c := range pr.pending {
		t := merged[c.prod]
		if t == nil {
			t = c.prod.tally.clone()
			merged[c.prod] = t
		}
		t.add(&c, pr.verdictOf(c.verdict))
	}
	out := make([]Producer, 0, len(pr.m))
	for _, s := range pr.m {
		r := merged[s]
		if r == nil {
			r = &s.tally
		}
		out = append(out, s.profile(r))
	}
	sortProducers(out)
	return out
}

// profile is the Producer of s, with what the findings say of its re-sends
// in r, and its Diagnosis.
func (s *producerState) profile(r *tally) Producer {
	p := s.p
	p.TransactionalIDs = slices.Clone(p.TransactionalIDs)
	p.SASLUsers = slices.Clone(p.SASLUsers)
	p.Acks = slices.Clone(p.Acks)
	p.TimeoutsMillis = slices.Clone(p.TimeoutsMillis)
	p.ApiVersions = slices.Clone(p.ApiVersions)
	p.ProduceVersions = slices.Clone(p.ProduceVersions)
	p.ByVerdict = map[detect.Verdict]int64{}
	p.Resent, p.Resends, p.MostCopies, p.Causes = r.resent, r.resends, r.mostCopies, slices.Clone(r.causes)
	p.Renumbered, p.Changes = r.renumbered, slices.Clone(r.changes)
	slices.SortStableFunc(p.Changes, func(a, b ChangeCount) int { return cmp.Compare(b.Count, a.Count) })
	if p.SoftwareName != "" {
		p.LibrdkafkaVersion = librdkafkaVersion(p.SoftwareName, p.SoftwareVersion)
	} else {
		e := inferEvidence{clientID: p.ClientID, apiVersions: -1, produce: p.ProduceVersions}
		if n := len(p.ApiVersions); n > 0 {
			e.apiVersions = p.ApiVersions[n-1]
		}
		p.SoftwareGuess, p.InferredFrom = inferSoftware(&e)
	}
	for v, n := range r.byVerdict {
		p.ByVerdict[v] = n
	}
	p.Batches = max(p.Sends-p.Resends, 0)
	if p.Sends > 0 {
		p.RecordsMean = float64(s.records) / float64(p.Sends)
	}
	for c := range 8 {
		if s.codecs&(1<<c) != 0 {
			p.Codecs = append(p.Codecs, decode.CodecName(int16(c)))
		}
	}
	for err, n := range s.errSends {
		if !s.lastRequest.After(s.lastError) {
			break // the capture may have ended before the retries
		}
		if left := n - s.retriedBy[err]; left > 0 {
			p.Unretried = append(p.Unretried, ErrorCount{Error: err, Count: left})
		}
	}
	slices.SortFunc(p.Unretried, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Error, b.Error))
	})
	slices.SortFunc(p.Causes, func(a, b CauseCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Cause, b.Cause), cmp.Compare(a.Error, b.Error))
	})
	// Every answer timed is a broker's (none beyond maxProfileBrokers):
	// the producer's latency is the brokers' together.
	var all, ok Sketch
	p.Latency = make([]BrokerLatency, len(s.p.Latency))
	for i, l := range s.p.Latency {
		p.Latency[i] = latencyOf(l.Broker, l.all, l.ok)
		all.merge(l.all)
		ok.merge(l.ok)
	}
	p.Overall = latencyOf(netip.AddrPort{}, &all, &ok)
	slices.SortFunc(p.Latency, func(a, b BrokerLatency) int { return a.Broker.Compare(b.Broker) })
	p.Diagnosis = Diagnose(&p)
	return p
}

// sortProducers puts profiles in the order their producers were first seen.
func sortProducers(ps []Producer) {
	slices.SortFunc(ps, func(a, b Producer) int {
		return cmp.Or(a.first.Compare(b.first), cmp.Compare(a.order, b.order))
	})
}

// latencyOf reads the quantiles of the sketches of one broker.
func latencyOf(broker netip.AddrPort, all, ok *Sketch) BrokerLatency {
	return BrokerLatency{
		Broker:             broker,
		Answered:           int64(all.Count()),
		P50Millis:          millis(int64(all.Quantile(0.5))),
		P99Millis:          millis(int64(all.Quantile(0.99))),
		MaxMillis:          millis(int64(all.Max())),
		Succeeded:          int64(ok.Count()),
		SucceededP50Millis: millis(int64(ok.Quantile(0.5))),
		SucceededP99Millis: millis(int64(ok.Quantile(0.99))),
		Histogram:          all.Histogram(),
	}
}

func millis(ns int64) float64 { return float64(ns) / 1e6 }

// addCause counts the re-send a, sent after the attempt prev, in causes.
func addCause(causes []CauseCount, prev, a *detect.Attempt) []CauseCount {
	c := CauseCount{Cause: a.Cause, Error: a.CauseError, Count: 1, MinGapMillis: a.GapMillis, MaxGapMillis: a.GapMillis}
	if e := prev.End; e != nil && !e.Time.IsZero() {
		from := prev.Time
		if a.Cause == detect.CauseAnswerLost && prev.Response != nil {
			from = prev.Response.Time
		}
		end, after := millis(int64(e.Time.Sub(from))), millis(int64(a.Time.Sub(e.Time)))
		c.Ended, c.MinEndMillis, c.MaxEndMillis, c.MinAfterEndMillis, c.MaxAfterEndMillis = 1, end, end, after, after
	}
	return mergeCause(causes, c)
}

// mergeCause adds the count of c to causes, under its cause and error.
func mergeCause(causes []CauseCount, c CauseCount) []CauseCount {
	for i := range causes {
		e := &causes[i]
		if e.Cause == c.Cause && e.Error == c.Error {
			e.Count += c.Count
			e.MinGapMillis = min(e.MinGapMillis, c.MinGapMillis)
			e.MaxGapMillis = max(e.MaxGapMillis, c.MaxGapMillis)
			switch {
			case c.Ended == 0:
			case e.Ended == 0:
				e.Ended, e.MinEndMillis, e.MaxEndMillis, e.MinAfterEndMillis, e.MaxAfterEndMillis =
					c.Ended, c.MinEndMillis, c.MaxEndMillis, c.MinAfterEndMillis, c.MaxAfterEndMillis
			default:
				e.Ended += c.Ended
				e.MinEndMillis, e.MaxEndMillis = min(e.MinEndMillis, c.MinEndMillis), max(e.MaxEndMillis, c.MaxEndMillis)
				e.MinAfterEndMillis, e.MaxAfterEndMillis = min(e.MinAfterEndMillis, c.MinAfterEndMillis), max(e.MaxAfterEndMillis, c.MaxAfterEndMillis)
			}
			return causes
		}
	}
	return append(causes, c)
}
