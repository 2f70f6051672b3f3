package decode

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults for Options fields left zero.
const (
	DefaultPort          = 9092
	DefaultMaxFrameBytes = 100 << 20
	DefaultMaxPending    = 1024
	// DefaultMaxHeldFrameBytes bounds a frame decoded whole
	// (Options.MaxHeldFrameBytes): 16 times a producer's default
	// max.request.size and a consumer's default max.partition.fetch.bytes.
	DefaultMaxHeldFrameBytes = 16 << 20
	// DefaultMaxBufferedFrameBytes bounds the partial frames held over all
	// connections (Options.MaxBufferedFrameBytes): room for four frames of
	// DefaultMaxHeldFrameBytes in flight at once.
	DefaultMaxBufferedFrameBytes = 64 << 20
)

// Sniffing bounds: a connection on a port that is not a Kafka port is given
// up once this much of it (both directions) or this many segment starts did
// not parse as a Kafka request frame.
const (
	sniffGiveUpBytes = 128 << 10
	sniffGiveUpTries = 32
	// sniffBodyBytes: while sniffing, a candidate request frame up to this
	// size must parse whole (kmsg) to be taken as Kafka; a larger one is
	// judged on its header alone.
	sniffBodyBytes = 64 << 10
	// probeBytes caps what an unsynced direction buffers of a candidate
	// frame start that does not yet tell whether it is a frame.
	probeBytes = sniffBodyBytes + 4
	// MaxErrors is how many malformed-input messages Errors keeps.
	MaxErrors = 20
	// keepBufBytes: a direction's frame buffer grown beyond this for one
	// large frame is released after it.
	keepBufBytes = 1 << 20
	// maxClientIDs bounds the distinct client.ids a connection lists and
	// shares; a client sets one, so more are a sign of junk, and each
	// further one is only copied for its exchange.
	maxClientIDs = 16
	// maxNames bounds the interned topic names and maxTopicIDs the topic
	// IDs learned from Metadata responses, over the whole run: a cluster
	// has that many topics at most in any capture worth reading, and junk
	// must not grow them without end. Past the bound names are copied
	// rather than shared and new IDs are not learned.
	maxNames    = 1 << 16
	maxTopicIDs = 1 << 16
)

// Options configure a Decoder.
type Options struct {
	// Ports are the broker ports; nil means {9092}. A connection with one
	// end on a port listed here is Kafka, that end being the broker.
	Ports []uint16
	// Sniff also takes connections on other ports whose bytes parse as
	// Kafka request frames.
	Sniff bool
	// MaxFrameBytes bounds a frame's size field; a larger (or negative)
	// size is malformed and never allocated. Zero means 100 MiB (the
	// broker's socket.request.max.bytes).
	MaxFrameBytes int32
	// MaxHeldFrameBytes bounds the frames decoded whole. A larger frame
	// (up to MaxFrameBytes) is never held: its header is read for the
	// correlation ID, so that its response stays matched, and the rest is
	// passed over as it arrives, counted in Stats.OversizedFrames; a
	// re-send inside it is not seen. Zero means DefaultMaxHeldFrameBytes.
	MaxHeldFrameBytes int32
	// MaxPending bounds the requests awaiting a response per connection;
	// the oldest is evicted beyond it. Zero means 1024.
	MaxPending int
	// Clusters names the clusters of broker addresses where the capture
	// cannot tell (no Metadata response with a ClusterID): each
	// Exchange.Cluster is the name of its broker's (cluster.go).
	Clusters []Cluster
	// MaxConnections bounds the connections Connections lists: the first
	// MaxConnections taken as Kafka are listed, later ones only counted
	// (Stats.Connections counts all), so that a capture that never ends
	// keeps bounded memory. Zero means no bound.
	MaxConnections int
	// Records, when positive, decodes the first Records records of each
	// batch into Batch.Records, decompressing the batch if need be. Zero
	// (the default) decodes no record and costs nothing.
	Records int
	// RecordPrints, when true, keeps the bytes of each batch until its
	// exchange is complete, so that the Sink may fingerprint its records
	// with Batch.RecordPrints (for record-level matching of re-sends whose
	// batches were rebuilt, or sent again by an idempotent producer under
	// a new epoch or producer ID); nothing is decompressed unless the Sink
	// asks.
	RecordPrints bool
	// MaxDecompressedBytes caps what one batch (or legacy wrapper message)
	// decompresses to when Records is positive or RecordPrints is set; the rest is never
	// allocated and is counted in Stats.DecompressTruncated. Zero means
	// DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
	// MaxDecompressedTotal bounds what the Decoder decompresses over the
	// whole run (for Records and RecordPrints, all connections), so that
	// many small batches each expanding to the per-batch cap cannot cost
	// memory bandwidth and CPU without end. A batch decompressed once the
	// rest of the budget is less than the per-batch cap stops at the rest
	// (counted in Stats.DecompressTruncated); once it is spent nothing is
	// decompressed any more: records are not read and prints not made
	// (Stats.DecompressSkipped). Zero means DefaultMaxDecompressedTotal.
	// decode does not know the capture's size: a caller that does may set
	// it from that.
	MaxDecompressedTotal int64
	// MaxBufferedFrameBytes bounds the bytes of partial frames (a frame
	// whose end has not arrived yet, or a candidate frame start while
	// resyncing) held over all connections of the Decoder. A connection
	// whose partial frame would grow beyond it drops that frame, and its
	// direction resyncs at a later segment, as after a Gap (counted in
	// Stats.BufferDrops). Zero means DefaultMaxBufferedFrameBytes; it should
	// not be less than MaxHeldFrameBytes, or frames that large are always
	// dropped.
	MaxBufferedFrameBytes int64
	// MaxPrintBytes bounds, with RecordPrints, the batch bytes kept for
	// record prints over the pending exchanges of all connections (the
	// produce requests in flight; a frame's array lent to its exchange
	// counts whole, lend.go); beyond it a batch is fingerprinted at
	// once (Stats.PrintedEager), and the prints so made that pending
	// exchanges hold are bounded by as many bytes again, beyond which a
	// batch is not fingerprinted (Stats.PrintsSkipped). Zero means
	// DefaultMaxPrintBytes.
	MaxPrintBytes int
}

// Stats counts what a Decoder saw, over all connections.
type Stats struct {
	Connections      int64 // connections taken as Kafka
	Rejected         int64 // sniffed connections given up as not Kafka
	Frames           int64 // frames decoded, both directions
	Requests         int64 // request frames
	Responses        int64 // response frames
	ProduceRequests  int64 // ProduceRequests decoded
	ProduceResponses int64 // ProduceResponses decoded
	Batches          int64 // record batches (or legacy message sets) in ProduceRequests
	Records          int64 // records in those batches, from their headers
	Malformed        int64 // frames, headers, bodies or batches that did not parse
	Resyncs          int64 // times a direction found frame boundaries again after dropping bytes
	Skipped          int64 // frames of APIs other than Produce, both directions
	Unmatched        int64 // responses with no pending request
	Evicted          int64 // pending requests dropped by Options.MaxPending
	DroppedBytes     int64 // bytes dropped while a direction's frame boundaries were unknown
	// Options.RecordPrints: records fingerprinted on the Sink's demand,
	// and batches whose bytes could not be kept (beyond the bound on bytes
	// kept) and were fingerprinted at once instead.
	RecordPrints int64
	PrintedEager int64
	// PrintsCut counts the batches fingerprinted only up to
	// MaxBatchPrints records; PrintsSkipped those not fingerprinted
	// because the prints made at once that pending exchanges held were at
	// their bound (Options.MaxPrintBytes).
	PrintsCut, PrintsSkipped int64
	// With Options.Records or RecordPrints only: batches whose records could not be
	// decompressed or parsed (the batch is kept, with the records read
	// before the error), and batches that decompressed to more than
	// Options.MaxDecompressedBytes (records past the cap are not shown).
	RecordErrors        int64
	DecompressTruncated int64
	// DecompressedBytes counts the bytes decompressed (Options.Records,
	// RecordPrints); DecompressSkipped the batches (or legacy wrappers)
	// left compressed because Options.MaxDecompressedTotal was spent:
	// their records are not read, their prints not made.
	DecompressedBytes int64
	DecompressSkipped int64
	// CorruptBatches counts the batches of ProduceRequests whose CRC does
	// not match their bytes (Batch.Corrupt): never matched. Fetched
	// batches that are corrupt are left out of FetchedBatches.
	CorruptBatches int64
	// BufferDrops counts the partial frames dropped because the partial
	// frames held over all connections reached Options.MaxBufferedFrameBytes
	// (their direction resyncs, as after a Gap; the bytes are also in
	// DroppedBytes).
	BufferDrops int64
	// OversizedFrames counts the frames over Options.MaxHeldFrameBytes,
	// passed over unread but for their header (OversizedProduce of them
	// ProduceRequests); OversizedBytes their bytes.
	OversizedFrames, OversizedProduce, OversizedBytes int64
	// Only when the Sink is a FetchSink: FetchResponses decoded and the
	// whole record batches they held.
	FetchResponses int64
	FetchedBatches int64
	// SASL: authentications that succeeded and that failed (sasl.go),
	// and the raw SaslHandshake v0 tokens skipped as authentication (also
	// counted in Frames, never as malformed).
	SASLAuthentications int64
	SASLFailures        int64
	SASLTokens          int64
}

// ConnSummary describes one connection taken as Kafka.
type ConnSummary struct {
	Info            *ConnInfo
	ClientIDs       []string // distinct non-null client.ids, in order seen
	ProduceRequests int64
	Frames          int64
	Malformed       int64
	// SASLMechanism, SASLUser and SASLFailed are those of the
	// connection's latest SASL authentication (a re-authentication
	// included), as ConnInfo has them for its first.
	SASLMechanism, SASLUser string
	SASLFailed              bool
	// SASLSpans are the times of its SASL authentications, each from the
	// packet completing the SaslHandshake request (or the first
	// SaslAuthenticate) to the one completing the last frame of the
	// exchange: every packet holding a token lies within. A zero To: not
	// seen to end. Evidence writers leave these packets out, so that no
	// password or token reaches a file. At most maxSASLSpans; the last
	// is then left open.
	SASLSpans []SASLSpan
}

// SASLSpan is the time span of one SASL authentication on a connection.
type SASLSpan struct{ From, To time.Time }

// Decoder holds what the connections of one run share: the Sink, the
// Shared state (connection numbering, topic names learned from Metadata
// responses, error samples), counts and interned names. It is not safe for concurrent use: capture calls every
// Stream from one goroutine.
type Decoder struct {
	sink Sink
	// atEnd: the input has ended, so connections closed from now on were
	// cut by the end of the capture, not by the peers.
	atEnd bool
	opts  Options

	conns []*ConnSummary
	// saslConns finds the connections that authenticated by their ends,
	// listed or not (SASLSpans); saslOrder bounds them.
	saslConns map[[2]netip.AddrPort][]*ConnSummary
	saslOrder [][2]netip.AddrPort

	// shared is the Decoder's own Shared; ssink, when the Sink is a
	// SharedSink, gets the Events instead (shared.go).
	shared *Shared
	ssink  SharedSink
	// names interns topic names so that each Batch of a topic shares one
	// string and decoding a request allocates none.
	names map[string]string

	stats Stats
	// held counts the capacity of the partial-frame buffers of all
	// connections (buffer.go).
	held int64
	// scan and scanBuf, while a buffered request frame is decoded, are
	// its direction's scan and buffer: the batch CRCs already summed.
	scan    *batchScan
	scanBuf []byte
	// scanHits counts the batches whose sums the scans gave (for tests).
	scanHits int
	// spares are arrays of large frames done, kept for the next ones;
	// spareBytes counts them and the arrays' room past the buffers cut
	// from them (buffer.go).
	spares     [][]byte
	spareBytes int64
	// errCount counts the messages this Decoder formatted (MaxErrors).
	errCount int

	// Reused while decoding; kmsg allocates the slices it fills anyway.
	reqs  []kmsg.Request // by API key, for header checks; nil entry: unknown key
	preq  kmsg.ProduceRequest
	presp kmsg.ProduceResponse
	mresp kmsg.MetadataResponse
	// Optional sinks (the Sink's own methods) and their reused requests
	// and responses: see fetch.go and txn.go.
	fsink  FetchSink
	tsink  TxnSink
	esink  EndSink
	freq   kmsg.FetchRequest
	ipreq  kmsg.InitProducerIDRequest
	ipresp kmsg.InitProducerIDResponse
	etreq  kmsg.EndTxnRequest
	etresp kmsg.EndTxnResponse
	hash   xxhash.Digest
	// pr decompresses batches for Options.Records and fingerprints them
	// for RecordPrints; raw keeps batch bytes for Options.RecordPrints.
	pr  Printer
	raw rawPool
	// lend is the array of the buffered request frame being decoded, for
	// its exchange to take (lend.go).
	lend frameLend
}

// New returns a Decoder handing complete exchanges to sink (nil discards
// them).
func New(sink Sink, opts Options) *Decoder {
	if opts.Ports == nil {
		opts.Ports = []uint16{DefaultPort}
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.MaxHeldFrameBytes <= 0 {
		opts.MaxHeldFrameBytes = DefaultMaxHeldFrameBytes
	}
	opts.MaxHeldFrameBytes = min(opts.MaxHeldFrameBytes, opts.MaxFrameBytes)
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxDecompressedBytes <= 0 {
		opts.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if opts.MaxDecompressedTotal <= 0 {
		opts.MaxDecompressedTotal = DefaultMaxDecompressedTotal
	}
	if opts.MaxBufferedFrameBytes <= 0 {
		opts.MaxBufferedFrameBytes = DefaultMaxBufferedFrameBytes
	}
	if opts.MaxPrintBytes <= 0 {
		opts.MaxPrintBytes = DefaultMaxPrintBytes
	}
	d := &Decoder{
		sink:   sink,
		opts:   opts,
		shared: NewShared(),
		names:  make(map[string]string),
	}
	d.pr = Printer{limit: opts.MaxDecompressedBytes, budget: opts.MaxDecompressedTotal, stats: &d.stats, pool: &d.raw}
	d.shared.NameClusters(opts.Clusters)
	d.ssink, _ = sink.(SharedSink)
	d.fsink, _ = sink.(FetchSink)
	d.tsink, _ = sink.(TxnSink)
	d.esink, _ = sink.(EndSink)
	for key := int16(0); ; key++ {
		r := kmsg.RequestForKey(key)
		if r == nil && key > 100 {
			break
		}
		d.reqs = append(d.reqs, r)
	}
	return d
}

// NewStream returns the decoder of a new TCP connection between a and b, or
// nil when it cannot be Kafka: Sniff is off and neither end is on a Kafka
// port. It satisfies capture.Stream.
func (d *Decoder) NewStream(a, b netip.AddrPort, ts time.Time) *Conn {
	aPort := slices.Contains(d.opts.Ports, a.Port())
	bPort := slices.Contains(d.opts.Ports, b.Port())
	if !aPort && !bPort && !d.opts.Sniff {
		return nil
	}
	c := &Conn{d: d, a: a, b: b}
	c.dirs[0].fromA = true
	switch {
	case aPort && !bPort:
		c.decide(false, "port")
	case bPort && !aPort:
		c.decide(true, "port")
	case aPort && bPort:
		// Both ends on a Kafka port: the requests decide, never rejected.
		c.byPort = true
	}
	return c
}

// Takes reports whether NewStream makes a Conn for a connection between a
// and b: one end on a Kafka port, or Options.Sniff; Sure whether that
// Conn takes every byte it is given from the start (Conn.Settled): one
// end on a Kafka port. Both read the options only, so they may be called
// from any goroutine (a caller that makes the Conns on another one decides
// at once which connections to hand on, and which may refuse their bytes).
func (d *Decoder) Takes(a, b netip.AddrPort) bool {
	return d.opts.Sniff || d.Sure(a, b)
}

// Sure: see Takes.
func (d *Decoder) Sure(a, b netip.AddrPort) bool {
	return slices.Contains(d.opts.Ports, a.Port()) || slices.Contains(d.opts.Ports, b.Port())
}

// Stats returns the counts so far.
func (d *Decoder) Stats() Stats { return d.stats }

// Connections returns every connection taken as Kafka so far, in ID order.
func (d *Decoder) Connections() []ConnSummary {
	out := make([]ConnSummary, len(d.conns))
	for i, s := range d.conns {
		out[i] = *s
		out[i].ClientIDs = slices.Clone(s.ClientIDs)
		out[i].SASLSpans = slices.Clone(s.SASLSpans)
	}
	return out
}

// Errors returns the first malformed-input messages, each naming the
// connection direction and byte position (none when the Sink is a
// SharedSink: they went to it).
func (d *Decoder) Errors() []string { return d.shared.Errors() }

// TopicNamedBy returns the connection and time of the Metadata response
// that first named topic ID id (Shared.TopicNamedBy).
func (d *Decoder) TopicNamedBy(id [16]byte) (*ConnInfo, time.Time, bool) {
	return d.shared.TopicNamedBy(id)
}

// share applies e to the Decoder's own Shared, or hands it to the Sink
// when that is a SharedSink.
func (d *Decoder) share(e Event) {
	if d.ssink != nil {
		d.ssink.Shared(e)
		return
	}
	d.shared.Apply(e)
}

// intern returns the shared copy of topic name s, which may alias frame
// bytes.
func (d *Decoder) intern(s string) string {
	if n, ok := d.names[s]; ok {
		return n
	}
	n := strings.Clone(s)
	if len(d.names) < maxNames {
		d.names[n] = n
	}
	return n
}

// request returns the reusable kmsg request for key, nil if kmsg knows no
// such API.
func (d *Decoder) request(key int16) kmsg.Request {
	if key < 0 || int(key) >= len(d.reqs) {
		return nil
	}
	return d.reqs[key]
}

// emit names the topics given by ID and hands x to the sink.
func (d *Decoder) emit(x *Exchange) {
	if d.ssink == nil { // else the caller resolves from the one Shared
		d.shared.Resolve(x)
	}
	if d.sink != nil {
		d.sink.Produce(x)
	}
	d.releaseRaw(x)
}

// errorf records one malformed-input message, if fewer than MaxErrors are
// kept, and counts it.
func (d *Decoder) errorf(c *Conn, fromA bool, pos int64, format string, args ...any) {
	d.stats.Malformed++
	if c.sum != nil {
		c.sum.Malformed++
	}
	// A Decoder's own messages are capped as the Shared's: beyond that
	// none is formatted.
	if d.errCount >= MaxErrors {
		return
	}
	d.errCount++
	src, dst := c.a, c.b
	if !fromA {
		src, dst = dst, src
	}
	d.share(Event{Kind: EventError, Name: fmt.Sprintf("decode: %s at %s->%s byte %d", fmt.Sprintf(format, args...), src, dst, pos)})
}

// EndOfInput tells the decoder the capture has ended: requests still awaiting
// a response when their connection is then closed complete with
// NoResponseEndOfCapture rather than NoResponseClosed. Call it before closing
// the streams at the end of the input.
func (d *Decoder) EndOfInput() { d.atEnd = true }
