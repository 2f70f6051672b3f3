package pipeline

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/fleet"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// CorrelateOptions configure a Correlate run.
type CorrelateOptions struct {
	// Options: Window, MaxBatches, Scope, Records (the records shown of
	// those the hosts published), AppDuplicates and Clusters as for a
	// capture; the capture and decode ones are not used.
	Options
	// Settle bounds the wait for a retry (0: detect.DefaultSettle).
	Settle time.Duration
	// Duration and Count stop the run after that long (wall clock) or
	// that many findings first reported; ExitIdle once no attempt came
	// for that long. 0: no bound.
	Duration time.Duration
	Count    int
	ExitIdle time.Duration
	// OnFinding sees every report of a finding as soon as it is decided,
	// with its hosts, scope and stable ID; OnTick every turn of the loop.
	OnFinding func(detect.Finding)
	OnTick    func(now time.Time)
}

// AttemptSource is where a Correlate run reads attempts: a
// fleet.Consumer.
type AttemptSource interface {
	// Poll returns the attempts the merge lets go within wait, appended
	// to out, in capture-time order.
	Poll(ctx context.Context, wait time.Duration, out []fleet.Event) ([]fleet.Event, error)
	// Flush returns every attempt still held.
	Flush(out []fleet.Event) []fleet.Event
	// Advance says how far detection got in capture time (for commits).
	Advance(t time.Time)
	// HostOf names the host of a connection the source numbered.
	HostOf(id uint64) string
	Hosts() []fleet.HostStats
}

// correlatePoll is how long one Poll waits for attempts.
const correlatePoll = 100 * time.Millisecond

// Correlate is the run of `kdupcap correlate`: the attempts of many hosts,
// read back from Kafka merged by capture time, through the detection of a
// live run (streaming: each finding reported once decided, and again when
// a later attempt revises it), and a profile per producer.
type Correlate struct {
	opts CorrelateOptions
	src  AttemptSource
	det  *detect.Detector
	prof *profile.Profiler

	buf      []fleet.Event
	findings int // first reports, for Count
	fleet    int64
	local    int64
	// newest is the capture time of the newest attempt fed, lastFed the
	// wall time it was fed: when idle, detection's time moves on by the
	// wall clock from there.
	newest  time.Time
	lastFed time.Time
	stats   decode.Stats
}

// NewCorrelate returns a Correlate run of o reading src.
func NewCorrelate(o CorrelateOptions, src AttemptSource) *Correlate {
	c := &Correlate{opts: o, src: src}
	c.prof = streamingProfiler(o.Window, o.Settle, o.MaxBatches)
	do := o.detectOptions()
	do.Streaming, do.Settle, do.OnFinding, do.Observe = true, o.Settle, c.finding, c.prof.Produce
	c.det = detect.New(do)
	return c
}

// Run reads attempts until ctx is done, Duration passes, Count findings
// were reported or no attempt came for ExitIdle; it returns the source's
// error if reading failed.
func (c *Correlate) Run(ctx context.Context) error {
	start := time.Now()
	lastArrival := start
	for {
		now := time.Now()
		switch {
		case ctx.Err() != nil,
			c.opts.Count > 0 && c.findings >= c.opts.Count,
			c.opts.Duration > 0 && now.Sub(start) >= c.opts.Duration,
			c.opts.ExitIdle > 0 && now.Sub(lastArrival) >= c.opts.ExitIdle:
			return nil
		}
		evs, err := c.src.Poll(ctx, correlatePoll, c.buf[:0])
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now = time.Now()
		if len(evs) > 0 {
			lastArrival = now
			c.feed(evs, now)
		} else if !c.newest.IsZero() {
			// Idle: the hosts' capture time goes on with the wall clock,
			// so that findings waiting for a retry are still decided.
			c.det.Advance(c.newest.Add(now.Sub(c.lastFed)))
		}
		c.buf = evs[:0]
		if c.opts.OnTick != nil {
			c.opts.OnTick(now)
		}
	}
}

// feed hands the events to detect, in order.
func (c *Correlate) feed(evs []fleet.Event, now time.Time) {
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case fleet.KindAttempt:
			x := e.Exchange
			c.count(x)
			for j := range x.Batches {
				b := &x.Batches[j]
				if len(b.Records) > c.opts.Records {
					b.Records = b.Records[:c.opts.Records]
				}
				if len(b.Records) == 0 {
					b.Records = nil
				}
			}
			c.det.Produce(x)
		case fleet.KindConnEnd:
			c.det.ConnEnd(e.Conn, e.End)
		case fleet.KindEndTxn:
			c.det.EndTxn(e.EndTxn)
		case fleet.KindInitProducerID:
			c.det.InitProducerID(e.InitProducerID)
		}
		if e.At.After(c.newest) {
			c.newest = e.At
		}
		clear(evs[i : i+1])
	}
	c.lastFed = now
	c.src.Advance(c.newest)
}

// count adds x to the decode-stage counts of the summary.
func (c *Correlate) count(x *decode.Exchange) {
	c.stats.ProduceRequests++
	if x.Responded {
		c.stats.ProduceResponses++
	}
	for _, b := range x.Batches {
		c.stats.Batches++
		if b.NumRecords > 0 {
			c.stats.Records += int64(b.NumRecords)
		}
		if b.Corrupt {
			c.stats.CorruptBatches++
		}
	}
}

// Finish decides every attempt still held or remembered and reports the
// findings not reported yet.
func (c *Correlate) Finish() {
	evs := c.src.Flush(c.buf[:0])
	if len(evs) > 0 {
		c.feed(evs, time.Now())
	}
	c.det.Flush()
}

// finding is detect's OnFinding: the finding's hosts, scope and stable
// ID, then the profiles and OnFinding.
func (c *Correlate) finding(f detect.Finding) {
	for i := range f.Attempts {
		f.Attempts[i].Host = c.src.HostOf(f.Attempts[i].ConnID)
	}
	hosts := report.AttemptHosts(&f)
	if len(hosts) > 1 {
		f.Scope = detect.ScopeFleet
	}
	if !showClusters(c.opts.Options, c.det) {
		f.Cluster = ""
	}
	f.StableID = StableID(&f)
	if f.Revision == 0 {
		c.findings++
		if len(hosts) > 1 {
			c.fleet++
		} else {
			c.local++
		}
	}
	c.prof.Finding(&f)
	if c.opts.OnFinding != nil {
		c.opts.OnFinding(f)
	}
}

// StableID names f from its producer and its batch, so that every report
// of it, by any instance reading the same attempts, has the same ID: a
// digest of its kind, its first attempt's client (IP without port) and
// client.id, its topic and partition, producer ID, epoch and first
// sequence, batch CRC and record count, as 16 hex digits. Connection IDs
// and times, which differ between instances, are left out.
func StableID(f *detect.Finding) string {
	h := xxh3.New()
	h.WriteString(string(f.Kind))
	h.Write([]byte{0})
	ip := f.Client.Addr().Unmap().As16()
	h.Write(ip[:])
	if f.ClientID != nil {
		h.Write([]byte{1})
		h.WriteString(*f.ClientID)
	}
	h.Write([]byte{0})
	h.WriteString(f.Topic)
	h.Write(f.TopicID[:])
	var b [8 + 4 + 2 + 4 + 4 + 4]byte
	binary.BigEndian.PutUint64(b[0:], uint64(f.ProducerID))
	binary.BigEndian.PutUint32(b[8:], uint32(f.Partition))
	binary.BigEndian.PutUint16(b[12:], uint16(f.ProducerEpoch))
	binary.BigEndian.PutUint32(b[14:], uint32(f.FirstSequence))
	binary.BigEndian.PutUint32(b[18:], f.BatchCRC)
	binary.BigEndian.PutUint32(b[22:], uint32(f.NumRecords))
	h.Write(b[:])
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], h.Sum64())
	return hex.EncodeToString(sum[:])
}

// Stats are the Detector's counts so far.
func (c *Correlate) Stats() detect.Stats { return c.det.Stats() }

// Producers returns the producer profiles.
func (c *Correlate) Producers() []profile.Producer { return c.prof.Producers() }

// Timeline returns the produce latency per broker over capture time.
func (c *Correlate) Timeline() *profile.Timeline { return c.prof.Timeline() }

// Summary is the run's summary, after Finish: the detection's counts and
// what was seen of each host; fs is the source's side of it (records read,
// partitions), to which the hosts are added.
func (c *Correlate) Summary(name string, fs report.FleetSummary) report.Summary {
	s := buildSummary([]string{name}, nil, capture.Stats{}, c.stats, nil, c.det.Stats())
	s.ProducerExchangesOmitted = c.prof.Omitted()
	fs.FleetFindings, fs.Local = c.fleet, c.local
	for _, h := range c.src.Hosts() {
		fs.Hosts = append(fs.Hosts, report.FleetHost{Host: h.Host, Attempts: h.Attempts, ConnEnds: h.ConnEnds,
			Late: h.Late, MaxLate: h.MaxLate, MaxLag: h.MaxLag, Forced: h.Forced})
	}
	s.Fleet = &fs
	return s
}

// Counters are the cumulative counts of the run, for metrics and status
// lines.
func (c *Correlate) Counters() report.Counters {
	ts := c.det.Stats()
	return report.Counters{
		ProduceRequests:  c.stats.ProduceRequests,
		ProduceResponses: c.stats.ProduceResponses,
		Batches:          c.stats.Batches,
		Records:          c.stats.Records,
		EvictedBatches:   ts.Evicted + ts.Expired,
		Topics:           topicCounts(ts),
	}
}
