package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/capture/live"
	"github.com/kdupcap/kdupcap/capture/tlsdecrypt"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// LiveOptions configure a Live run.
type LiveOptions struct {
	Options
	// Settle bounds the wait for a retry after an attempt answered with a
	// retriable error, or not at all (0: detect.DefaultSettle).
	Settle time.Duration
	// Name is the input as the summary names it (e.g. "live:eth0").
	Name string
	// Duration and Count stop the run after that long (wall-clock time)
	// or that many findings first reported; 0: no bound.
	Duration time.Duration
	Count    int
	// EvidenceDir, if set, gets a pcap of every finding's packets, from a
	// bounded ring of the recent packets of every connection.
	EvidenceDir string
	// Ignore, if set, keeps connections it answers true for out of the
	// run (kdupcap's own emission traffic).
	Ignore func(a, b netip.AddrPort) bool
	// OnFinding sees every report of a finding, as soon as it is decided;
	// OnTick, if set, is called at every turn of the read loop (a packet,
	// or an idle poll).
	OnFinding func(detect.Finding)
	OnTick    func(now time.Time)
	// Warnings gets one line per evidence file that could not be written
	// whole (nil: discarded).
	Warnings io.Writer
}

// LiveSource is where a Live run reads packets: a live.Source.
type LiveSource interface {
	// Next returns the next packet, or live.ErrTimeout when none came
	// within a poll interval.
	Next() (capture.Packet, error)
	Stats() live.Stats
}

// Live bounds and defaults.
const (
	// maxLiveConnections bounds the Kafka connections a live run lists in
	// its summary; the others are counted.
	maxLiveConnections = 1000
	// dropCheckEvery is how many packets pass between two readings of the
	// kernel's drop counter (and at every idle poll): the resolution with
	// which a finding is said to cross a drop.
	dropCheckEvery = 256
	// maxDropTimes bounds the drop times remembered for crossesDrop.
	maxDropTimes = 1024
)

// Live is the run of `kdupcap live`: packets read from a live interface
// until it must stop, each finding reported as soon as it is decided (and
// again when a later attempt revises it), its packets written as evidence,
// and a profile per producer at the end.
type Live struct {
	opts     LiveOptions
	src      LiveSource
	p        *single
	prof     *profile.Profiler
	evidence *capture.Evidence
	tls      *tlsLayer
	// keyFiles follow Options.TLSKeyLogs as they grow; keyErr says which
	// one's error was told already.
	keyFiles []*tlsdecrypt.Follower
	keyErr   []bool
	nextPoll time.Time

	findings   int              // first reports, for Count
	toEvidence []detect.Finding // decided during the last packet, written after it
	drops      uint64           // kernel drops seen so far
	dropTimes  []time.Time      // when the drop count was seen to grow
}

// NewLive returns a Live run of o reading src. It fails only when the
// evidence directory cannot be made.
func NewLive(o LiveOptions, src LiveSource) (*Live, error) {
	l := &Live{opts: o, src: src}
	if o.EvidenceDir != "" {
		if err := os.MkdirAll(o.EvidenceDir, 0o755); err != nil {
			return nil, err
		}
		l.evidence = capture.NewEvidence(capture.EvidenceOptions{})
	}
	l.prof = streamingProfiler(o.Window, o.Settle, o.MaxBatches)

	l.tls = newTLSLayer(nil, o.Ports, true)
	for _, name := range o.TLSKeyLogs {
		l.keyFiles = append(l.keyFiles, l.tls.keys.Follow(name))
	}
	l.keyErr = make([]bool, len(l.keyFiles))
	st := stages{det: o.detectOptions(), dec: o.decodeOptions(1), asm: o.assemblerOptions(1),
		observe: l.observe, ignore: o.Ignore, wrap: l.tls.wrap, attempts: o.Attempts}
	st.det.Streaming, st.det.Settle, st.det.OnFinding = true, o.Settle, l.finding
	st.dec.MaxConnections = maxLiveConnections
	st.asm.Evidence = l.evidence
	l.p = newSingle(st)
	return l, nil
}

// Run reads packets until ctx is done, Duration passes or Count findings
// were reported; it returns the source's error if reading failed. Without
// traffic the source answers live.ErrTimeout every poll interval, and the
// wall clock moves the run's time on, so that findings waiting for a retry
// are still decided.
//
// Told to stop by ctx or Duration, it drains: it goes on reading what the
// kernel captured before the stop, what the user asked to see, some of it
// still in the ring (a stop right after an incident's last request must
// not lose its answer). It ends at the first packet stamped after the
// stop, at an idle poll once every block open at the stop was handed over
// (drainBlock), or drainMax after the stop.
func (l *Live) Run(ctx context.Context) error {
	start := time.Now()
	var deadline time.Time
	if l.opts.Duration > 0 {
		deadline = start.Add(l.opts.Duration)
	}
	var stopAt time.Time // when told to stop; zero until then
	sinceDropCheck := 0
	l.pollKeys(start)
	for {
		if l.opts.Count > 0 && l.findings >= l.opts.Count {
			return nil
		}
		now := time.Now()
		if stopAt.IsZero() && (ctx.Err() != nil || (!deadline.IsZero() && !now.Before(deadline))) {
			stopAt = now
		}
		draining := !stopAt.IsZero()
		if draining && now.Sub(stopAt) >= drainMax {
			return nil
		}
		pkt, err := l.src.Next()
		switch {
		case err == nil:
			if draining && pkt.CI.Timestamp.After(stopAt) {
				return nil
			}
			l.p.asm.Add(pkt)
			sinceDropCheck++
		case errors.Is(err, live.ErrTimeout):
			if draining && time.Since(stopAt) >= drainBlock {
				return nil
			}
			l.p.asm.Tick(now)
			l.p.det.Advance(now)
			sinceDropCheck = dropCheckEvery
		default:
			return err
		}
		l.writeEvidence()
		if !now.Before(l.nextPoll) {
			l.pollKeys(now)
		}
		// Reading the kernel's counters is a system call: not per packet.
		if sinceDropCheck >= dropCheckEvery {
			sinceDropCheck = 0
			l.checkDrops(now)
		}
		if l.opts.OnTick != nil {
			l.opts.OnTick(now)
		}
	}
}

// Bounds of Run's drain: a block of the kernel's ring is handed over up
// to live.DefaultBlockTimeout after its first packet, so a packet captured
// just before the stop may come that much later; traffic stamped before
// the stop that never pauses (a clock stepped back) is read for at most
// drainMax.
const (
	drainBlock = live.DefaultBlockTimeout
	drainMax   = time.Second
)

// Finish flushes what is pending: the decoder marks unanswered requests as
// cut by the end of the capture, detect reports the findings not yet
// reported, and their evidence is written.
func (l *Live) Finish() {
	// The keys written since the last poll, for the connections that
	// still wait, then those that never came given up.
	l.pollKeys(time.Now())
	l.tls.dec.Flush()
	l.p.finish()
	l.writeEvidence()
}

// Stats are the Detector's counts so far.
func (l *Live) Stats() detect.Stats { return l.p.det.Stats() }

// Producers returns the producer profiles.
func (l *Live) Producers() []profile.Producer { return l.prof.Producers() }

// Timeline returns the produce latency per broker over capture time of
// every answered exchange so far (a copy).
func (l *Live) Timeline() *profile.Timeline { return l.prof.Timeline() }

// Errors returns the first malformed-input messages, then those of the key
// log lines that did not parse.
func (l *Live) Errors() []string { return append(l.p.dec.Errors(), l.tls.malformed()...) }

// keyPollEvery is how often a Live run reads what was appended to its key
// log files: a connection's keys are written once its handshake is done,
// and its records wait, bounded, until they come.
const keyPollEvery = 250 * time.Millisecond

// pollKeys reads the lines appended to the key log files; a file that
// cannot be read is said once on Warnings, and tried again.
func (l *Live) pollKeys(now time.Time) {
	l.nextPoll = now.Add(keyPollEvery)
	added := 0
	for i, f := range l.keyFiles {
		n, err := f.Poll()
		if err != nil && !l.keyErr[i] && l.opts.Warnings != nil {
			fmt.Fprintf(l.opts.Warnings, "kdupcap: --tls-keylog: %v\n", err)
		}
		l.keyErr[i] = err != nil
		added += n
	}
	if added > 0 {
		// Connections that went quiet waiting for these keys.
		l.tls.dec.Wake()
	}
}

// Summary is the run's summary, after Finish.
func (l *Live) Summary() report.Summary {
	s := buildSummary([]string{l.opts.Name}, nil, l.p.asm.Stats(), l.p.dec.Stats(), l.p.dec.Connections(), l.p.det.Stats())
	s.Drops = int64(l.src.Stats().Drops)
	s.ProducerExchangesOmitted = l.prof.Omitted()
	s.TLS = l.tls.summary()
	return s
}

// Counters gathers the cumulative counts of every stage, for metrics and
// status lines.
func (l *Live) Counters() report.Counters {
	cs := l.p.asm.Stats()
	ds := l.p.dec.Stats()
	ts := l.p.det.Stats()
	ls := l.src.Stats()
	return report.Counters{
		Packets:            cs.Packets,
		Bytes:              cs.Bytes,
		Drops:              int64(ls.Drops),
		KernelPackets:      int64(ls.Packets),
		ProduceRequests:    ds.ProduceRequests,
		ProduceResponses:   ds.ProduceResponses,
		Batches:            ds.Batches,
		Records:            ds.Records,
		Malformed:          ds.Malformed,
		Gaps:               cs.Gaps,
		Connections:        ds.Connections,
		EvictedConnections: cs.IdleClosed + cs.Evicted,
		EvictedBatches:     ts.Evicted + ts.Expired,
		EvictedPending:     ds.Evicted,
		Topics:             topicCounts(ts),
	}
}

// observe feeds every produce exchange to the producer profiles, then to
// Observe.
func (l *Live) observe(x *decode.Exchange) {
	l.prof.Produce(x)
	if l.opts.Observe != nil {
		l.opts.Observe(x)
	}
}

// finding is detect's OnFinding: a finding sent while the kernel dropped
// packets says so, and goes to the profiles, OnFinding and the evidence.
func (l *Live) finding(f detect.Finding) {
	if !showClusters(l.opts.Options, l.p.det) {
		f.Cluster = ""
	}
	if l.crossesDrop(&f) {
		f.Reason += "; the kernel dropped packets while it was sent: evidence may be missing"
	}
	if f.Revision == 0 {
		l.findings++
	}
	l.prof.Finding(&f)
	if l.opts.OnFinding != nil {
		l.opts.OnFinding(f)
	}
	if l.evidence != nil {
		l.toEvidence = append(l.toEvidence, f)
	}
}

// checkDrops notes when the kernel's drop count was seen to grow.
func (l *Live) checkDrops(now time.Time) {
	d := l.src.Stats().Drops
	if d <= l.drops {
		return
	}
	l.drops = d
	l.dropTimes = append(l.dropTimes, now)
	if len(l.dropTimes) > maxDropTimes {
		l.dropTimes = append(l.dropTimes[:0], l.dropTimes[len(l.dropTimes)-maxDropTimes:]...)
	}
}

// crossesDrop says whether the kernel was seen dropping packets during the
// finding's span (to the resolution of the read loop).
func (l *Live) crossesDrop(f *detect.Finding) bool {
	if len(l.dropTimes) == 0 || len(f.Attempts) == 0 {
		return false
	}
	from, to := f.Span()
	for _, t := range l.dropTimes {
		if !t.Before(from) && !t.After(to.Add(EvidenceMargin)) {
			return true
		}
	}
	return false
}

// writeEvidence writes the pcap of every finding decided since the last
// call: after the packet that decided it was recorded.
func (l *Live) writeEvidence() {
	for i := range l.toEvidence {
		f := &l.toEvidence[i]
		path := filepath.Join(l.opts.EvidenceDir, evidenceName(f))
		from, to := f.Span()
		var spans []capture.ConnSpan
		for _, c := range evidenceConns(f) {
			spans = append(spans, capture.ConnSpan{A: c.A, B: c.B, From: from.Add(-EvidenceMargin), To: to.Add(EvidenceMargin)})
		}
		err := l.writeEvidenceFile(path, withoutSASL(spans, l.p.dec.SASLSpans))
		switch {
		case err == nil || l.opts.Warnings == nil:
		case errors.Is(err, capture.ErrEvidenceEvicted):
			fmt.Fprintf(l.opts.Warnings, "kdupcap: evidence %s is partial: older packets of its connections were evicted to bound memory\n", path)
		default:
			fmt.Fprintf(l.opts.Warnings, "kdupcap: evidence %s: %v\n", path, err)
		}
	}
	clear(l.toEvidence)
	l.toEvidence = l.toEvidence[:0]
}

func (l *Live) writeEvidenceFile(path string, spans []capture.ConnSpan) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, werr := l.evidence.WritePcapSpans(f, spans)
	if err := f.Close(); werr == nil {
		werr = err
	}
	return werr
}

// evidenceName is the file name of a finding's evidence: its first
// attempt's time, topic-partition, connection and correlation ID.
func evidenceName(f *detect.Finding) string {
	return fmt.Sprintf("finding-%s-%s-%d-conn%d-corr%d.pcap", f.Attempts[0].Time.UTC().Format("20060102T150405.000000000Z"),
		safeName(f.Topic), f.Partition, f.ConnID, f.Attempts[0].CorrelationID)
}

// evidenceConns are the connections of a finding's attempts: one re-sent
// across connections gets the packets of all of them, merged by time, in
// its one file.
func evidenceConns(f *detect.Finding) []capture.Endpoints {
	var conns []capture.Endpoints
	for _, at := range f.Attempts {
		e := capture.Endpoints{A: at.Client, B: at.Broker}
		if !at.Client.IsValid() {
			e = capture.Endpoints{A: f.Client, B: f.Broker}
		}
		if !slices.Contains(conns, e) {
			conns = append(conns, e)
		}
	}
	return conns
}

// safeName keeps a topic name usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// streamingProfiler is the Profiler of a run that reports findings as it
// goes (live, correlate), of a Detector with this window, settle and max
// batches (each 0: detect's default). A finding can be reported again
// until its batch is forgotten, Window after its last attempt, and a
// report waits at most Settle. The findings kept revisable are bounded as
// the batches remembered, a quarter of them as by default
// (profile.DefaultMaxPending).
func streamingProfiler(window, settle time.Duration, maxBatches int) *profile.Profiler {
	if window <= 0 {
		window = detect.DefaultWindow
	}
	if settle <= 0 {
		settle = detect.DefaultSettle
	}
	if maxBatches <= 0 {
		maxBatches = detect.DefaultMaxBatches
	}
	return profile.New(profile.Options{Revisable: window + settle,
		MaxPending: max(maxBatches*profile.DefaultMaxPending/detect.DefaultMaxBatches, 1)})
}
