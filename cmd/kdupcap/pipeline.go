package main

import (
	"fmt"
	"net/netip"
	"os"
	"runtime/debug"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// pipelineOptions configures the stages for analyze and live alike: both
// run one pipeline from packets to findings.
type pipelineOptions struct {
	ports  []uint16
	sniff  bool
	window time.Duration
	// maxBatches bounds the batches detect remembers (--max-batches).
	maxBatches  int
	idleTimeout time.Duration
	// scope chooses the re-sends detect looks for (--scope).
	scope detect.Scope
	// records is how many records of each batch decode reads for the
	// findings (--records); 0 reads none.
	records int
	// recordMatch fingerprints every record of producers that are not
	// idempotent, to find records re-sent in rebuilt or re-batched
	// batches (--record-match).
	recordMatch bool
	// allRecords matches every record, to find the records the
	// application produced twice (--app-duplicates).
	allRecords bool

	// Live mode: findings are reported through onFinding as soon as they
	// are decided, and settle bounds the wait for a retry.
	live      bool
	settle    time.Duration
	onFinding func(detect.Finding)
	// observe, if set, sees every produce exchange before detect does.
	observe func(*decode.Exchange)
	// ignore, if set, keeps connections it answers true for out of the
	// pipeline (kdupcap's own emission traffic).
	ignore   func(a, b netip.AddrPort) bool
	evidence *capture.Evidence
}

// liveMaxConnections bounds the Kafka connections a live run lists in its
// summary; the others are counted.
const liveMaxConnections = 1000

// pipeline wires the stages: capture -> decode -> detect.
type pipeline struct {
	asm *capture.Assembler
	dec *decode.Decoder
	det *detect.Detector
	// links are the link types of the packets read (writedups.go).
	links []layers.LinkType
	// onRead, if set, is called by readFiles now and then with the input
	// bytes read so far (for the progress bar).
	onRead func(inputBytes int64)
}

// observed is the Detector as decode's sink (fetches and transactions
// included), with observe shown every produce exchange first.
type observed struct {
	*detect.Detector
	observe func(*decode.Exchange)
}

func (o observed) Produce(x *decode.Exchange) {
	o.observe(x)
	o.Detector.Produce(x)
}

// detectOptions are the Detector's options for o, for every pipeline.
func (o *pipelineOptions) detectOptions() detect.Options {
	return detect.Options{Window: o.window, Scope: o.scope, Live: o.live, Settle: o.settle,
		OnFinding: o.onFinding, AllRecords: o.allRecords, MaxBatches: o.maxBatches}
}

// decodeOptions are the Decoder's options for o, for every pipeline.
func (o *pipelineOptions) decodeOptions() decode.Options {
	dopts := decode.Options{Ports: o.ports, Sniff: o.sniff, Records: o.records, RecordPrints: o.recordMatch || o.allRecords}
	if o.live {
		dopts.MaxConnections = liveMaxConnections
	}
	return dopts
}

// streamsOf hands dec a stream per connection; a nil *decode.Conn (not
// Kafka) must become a nil interface, or capture would call methods on it.
func streamsOf(dec *decode.Decoder) capture.NewStreamFunc {
	return func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if c := dec.NewStream(a, b, ts); c != nil {
			return c
		}
		return nil
	}
}

func newPipeline(o pipelineOptions) *pipeline {
	p := &pipeline{}
	p.det = detect.New(o.detectOptions())
	var sink decode.Sink = p.det
	if o.observe != nil {
		sink = observed{p.det, o.observe}
	}
	p.dec = decode.New(sink, o.decodeOptions())
	newStream := streamsOf(p.dec)
	p.asm = capture.NewAssembler(func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		if o.ignore == nil {
			return newStream(a, b, ts)
		}
		if o.ignore(a, b) {
			return nil
		}
		return &ownCheck{a: a, b: b, ts: ts, ignore: o.ignore, newStream: newStream}
	}, capture.AssemblerOptions{IdleTimeout: o.idleTimeout, Evidence: o.evidence})
	return p
}

// ownCheck asks ignore again when a connection's first bytes come, and only
// then hands it to the decoder. The emitter learns the ends of a connection
// it dials once the handshake is done: its SYN may be read from the ring
// before that, but no byte is written on it before.
type ownCheck struct {
	a, b      netip.AddrPort
	ts        time.Time
	ignore    func(a, b netip.AddrPort) bool
	newStream capture.NewStreamFunc
	s         capture.Stream // set once decided and not ignored
	decided   bool
}

// stream decides, once, whether the connection is analyzed.
func (o *ownCheck) stream() capture.Stream {
	if !o.decided {
		o.decided = true
		if !o.ignore(o.a, o.b) {
			o.s = o.newStream(o.a, o.b, o.ts)
		}
	}
	return o.s
}

func (o *ownCheck) Data(fromA bool, data []byte, ts time.Time) bool {
	s := o.stream()
	return s != nil && s.Data(fromA, data, ts)
}

func (o *ownCheck) Gap(fromA bool, n int, ts time.Time) {
	if s := o.stream(); s != nil {
		s.Gap(fromA, n, ts)
	}
}

func (o *ownCheck) Close(ts time.Time) {
	// A connection closed before any byte was never the decoder's.
	if o.s != nil {
		o.s.Close(ts)
	}
}

// finish closes every connection and returns all findings, sorted.
func (p *pipeline) finish() []detect.Finding {
	p.dec.EndOfInput()
	p.asm.Close()
	return p.det.Flush()
}

func (p *pipeline) summary(files, inputErrs []string) report.Summary {
	return buildSummary(files, inputErrs, p.asm.Stats(), p.dec.Stats(), p.dec.Connections(), p.det.Stats())
}

// buildSummary puts the counts of the stages together; conns are the Kafka
// connections listed, in ID order.
func buildSummary(files, inputErrs []string, cs capture.Stats, ds decode.Stats, conns []decode.ConnSummary, ts detect.Stats) report.Summary {
	s := report.Summary{
		Files:            files,
		Packets:          cs.Packets,
		Bytes:            cs.Bytes,
		TCPConnections:   cs.TCPConnections,
		Gaps:             cs.Gaps,
		GapBytes:         cs.GapBytes,
		Frames:           ds.Frames,
		ProduceRequests:  ds.ProduceRequests,
		ProduceResponses: ds.ProduceResponses,
		Batches:          ds.Batches,
		Records:          ds.Records,
		Malformed:        ds.Malformed,
		Resyncs:          ds.Resyncs,
		FetchResponses:   ds.FetchResponses,
		FetchedBatches:   ds.FetchedBatches,
		Findings:         ts.Findings,
		RecordFindings:   ts.RecordFindings,
		EvictedBatches:   ts.Evicted,
		EvictedAge:       ts.EvictedAge,
		ByVerdict:        map[string]int64{},
		Errors:           inputErrs,
	}
	for v, n := range ts.ByVerdict {
		s.ByVerdict[string(v)] = n
	}
	for _, c := range conns {
		s.KafkaConnections = append(s.KafkaConnections, report.Connection{
			ID:              c.Info.ID,
			Client:          c.Info.Client,
			Broker:          c.Info.Broker,
			DetectedBy:      c.Info.DetectedBy,
			ClientIDs:       c.ClientIDs,
			ProduceRequests: c.ProduceRequests,
		})
	}
	s.KafkaConnectionsOmitted = max(0, ds.Connections-int64(len(s.KafkaConnections)))
	s.ByTopic = topicCounts(ts)
	return s
}

// parseScope reads --scope: connection, client or both.
func parseScope(s string) (detect.Scope, error) {
	switch s {
	case "connection":
		return detect.ScopeConnection, nil
	case "client":
		return detect.ScopeClient, nil
	case "both":
		return detect.ScopeBoth, nil
	}
	return "", fmt.Errorf("--scope %q: want connection, client or both", s)
}

// recordsUsage is the help text of --records.
const recordsUsage = "show the first `N` records of each finding's batch (offset, timestamp, key, value, headers), decompressing it if need be; 0: none"

// maxRecords bounds --records: a finding is read by a person.
const maxRecords = 1000

// checkRecords refuses a --records value out of range.
func checkRecords(n int) error {
	if n < 0 || n > maxRecords {
		return fmt.Errorf("--records %d: want 0 to %d", n, maxRecords)
	}
	return nil
}

// maxBatchesUsage is the help text of --max-batches.
const maxBatchesUsage = "the most batches remembered at once (about 400 bytes of memory each, indexes and queues included); beyond it the batch touched least recently is decided early (counted as evicted) and a later re-send of it is not matched"

// memoryLimit is the Go runtime's soft memory limit the CLI sets unless
// GOMEMLIMIT says otherwise, and gcPercent its GOGC unless GOGC does: the
// heap the default bounds allow (the detector's batches, record prints,
// reassembly buffers) stays well below the limit, and collecting at half
// the live heap again, not the whole, keeps the peak close to what is
// live (the collector costs about 2% of the CPU time either way).
const (
	memoryLimit = 224 << 20
	gcPercent   = 50
)

// setMemoryLimit applies memoryLimit and gcPercent where the environment
// does not set them.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// recordMatchUsage is the help text of --record-match.
const recordMatchUsage = "match the records (key, value, headers) of failed or unanswered attempts of producers that are not idempotent, and of the batches after them, to find retries that rebuilt or re-batched the records (segmentio/kafka-go, sarama)"

// appDuplicatesUsage is the help text of --app-duplicates.
const appDuplicatesUsage = "match every record of producers that are not idempotent, to find records the application produced twice with every attempt answered with success (record_duplicate); decompresses every such batch"

// scopeUsage is the help text of --scope.
const scopeUsage = "which re-sends to find: connection (on one connection), client (across connections of one client: same IP and client.id, or same producer ID and epoch), or both"

func topicCounts(ts detect.Stats) []report.TopicCount {
	out := make([]report.TopicCount, 0, len(ts.Topics))
	for _, t := range ts.Topics {
		out = append(out, report.TopicCount{
			Topic:      t.Topic,
			Batches:    t.Batches,
			Records:    t.Records,
			Findings:   t.Findings,
			Duplicated: t.Duplicated,
		})
	}
	return out
}
