package detect

import (
	"hash/maphash"
	"math"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// Defaults for Options.
const (
	DefaultWindow = 10 * time.Minute
	// DefaultMaxBatches bounds the detector's memory to about 26 MB
	// (some 400 bytes a batch, indexes and queues included), whatever the
	// window: at 10 minutes a busy broker's batches would not fit.
	// Stats.EvictedAge says how far back the bound let a run look. Each
	// batch may also keep its connection's ConnInfo and a carrier of its
	// records alive: 2^16, with DefaultMaxRecords, keeps a capture of
	// 200,000 connections that each leave a request unanswered under
	// 256 MiB of peak RSS (internal/hostile, half-open).
	DefaultMaxBatches = 1 << 16
	DefaultSettle     = 30 * time.Second
)

// Options configure a Detector. The zero value uses the defaults.
type Options struct {
	// Window is how long, in packet time, a batch is remembered after its
	// last attempt; 0 means DefaultWindow.
	Window time.Duration
	// MaxBatches caps the batches remembered at once; beyond it the oldest
	// is decided early and counted in Stats.Evicted. 0 means
	// DefaultMaxBatches.
	MaxBatches int
	// OnFinding, when set, is called with each finding as soon as it is
	// decided. Without Streaming: when its window has passed, when it is
	// evicted, or at Flush; the Finding shares its slices with the one Flush
	// returns: read them, do not modify them. Fetched-data and transaction
	// proof is applied only at Flush, so a finding passed before it may
	// have another Verdict and Proof than Flush's copy: the latter is
	// final. With Streaming: see Streaming.
	OnFinding func(Finding)
	// Observe, if set, sees every exchange Produce takes as a request of
	// its own, before detect files it: not the copies of one request seen
	// on another connection (echo.go). The producer profiles are fed so.
	Observe func(*decode.Exchange)

	// Scope chooses which re-sends are found: ScopeConnection groups only
	// the attempts sent on one connection (a re-send on a new connection
	// is not seen); ScopeClient groups the attempts of a client across its
	// connections (the same client IP, ignoring the port, and client.id; or,
	// for an idempotent producer, the same producer ID and epoch from any
	// address, as behind NAT, when the bytes are the same: producer IDs are
	// per cluster, so two producers may share one) and reports only the batches whose attempts
	// span two or more connections; ScopeBoth (""), the default, groups
	// across connections and reports every batch sent more than once, each
	// finding saying its own Scope. Any other value acts as ScopeBoth.
	Scope Scope

	// Streaming reports each finding as soon as it is decided, for a
	// capture that never ends (a live capture). A finding is decided when the last of its attempts
	// in send order has a final answer, one no retry can follow: NONE,
	// DUPLICATE_SEQUENCE_NUMBER, an error that is not retriable, or none
	// because it was sent with acks=0. An attempt answered with a retriable
	// error (kerr's list, REQUEST_TIMED_OUT and
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND included), not answered for the
	// partition, or not answered at all keeps the finding open until a
	// retry comes or Settle has passed after its last attempt; Window
	// passing or an eviction decides it too. A reported batch is still
	// remembered until Window: another attempt of it reports the finding
	// again, with every attempt, once decided, with Finding.Revision one
	// more; one reported while its transaction's outcome was unknown is
	// reported again, a revision, when an EndTxn or InitProducerId decides
	// it (txn.go). Flush reports what was not reported yet or changed
	// since. The detector keeps no finding after reporting it (but those
	// waiting for their transaction's end, 4096 at most) unless
	// KeepFindings is set, so memory is bounded by Window and MaxBatches
	// however long the run, and OnFinding's Finding is the caller's to keep (with
	// KeepFindings it shares its slices with the kept one: read them, do
	// not modify them). OnFinding is called during Produce, Advance,
	// EndTxn, InitProducerID or Flush, and must not call the Detector but
	// for Stats.
	Streaming bool
	// Settle is how long, in packet time after the last attempt of a batch
	// (its send or the answer to it, whichever came later), Streaming waits for
	// a retry after an answer that allows one; 0 means DefaultSettle. A
	// Settle longer than Window acts as Window.
	Settle time.Duration
	// KeepFindings, with Streaming, keeps the latest revision of every
	// finding so that Flush returns them all, as without Streaming; memory
	// then grows with the findings of the run. Without Streaming, findings
	// are always kept.
	KeepFindings bool

	// AllRecords matches the records of every batch of producers that are
	// not idempotent, finding too the records an application produced
	// twice with every attempt answered with success (KindRecordDuplicate)
	// anywhere in the capture. Without it, only the batches of failed or
	// unanswered attempts and the batches that follow them on the same
	// client and partition are matched: that finds every client retry,
	// and fingerprints (decompresses) little of healthy traffic.
	AllRecords bool

	// MaxRecords caps the record prints remembered at once for
	// record-level matching (see decode.Options.RecordPrints); beyond it
	// the oldest is forgotten early, counted in Stats.RecordsEvicted. 0
	// means DefaultMaxRecords.
	MaxRecords int

	// EchoWindow is how far apart, in packet time, two copies of one
	// request (the same correlation ID and batch bytes) may have been sent
	// on two connections to be one request seen twice (a proxy's two legs,
	// NAT, a capture given twice with clock skew) rather than a re-send:
	// the later copy is folded into the first and counted in Stats.Echoes
	// (echo.go). 0 means DefaultEchoWindow (1 s); a negative window folds
	// nothing.
	EchoWindow time.Duration
}

// Detector groups the attempts of each record batch and decides a Finding for
// every batch sent more than once. Feed it with Produce (and, with no
// traffic, Advance), end with Flush.
type Detector struct {
	opts   Options
	window int64 // ns
	// echoWindow is Options.EchoWindow in ns, negative when off; echo
	// holds the copies of requests seen (echo.go).
	echoWindow int64
	echo       echoState
	// clusterIdx numbers the clusters named by exchanges, from 1;
	// clusterNames[i-1] is cluster i's name (cluster.go).
	clusterIdx   map[string]uint16
	clusterNames []string
	scope        Scope // ScopeConnection, ScopeClient or ScopeBoth
	seed         maphash.Seed

	// bySeq and byBytes find a remembered batch by the digest of its
	// seqKey or bytesKey (see digest.go).
	bySeq map[uint64]int32
	// byClient counts the batches of bySeq filed under their client (see
	// otherProducer): while there are none, no lookup looks for one.
	// byCluster likewise counts the batches filed under their cluster
	// (cluster.go).
	byClient  int
	byCluster int
	byBytes   map[uint64]int32
	slab      slab[batch]
	free      []int32     // unused slots of slab
	spare     [][]attempt // emptied attempt lists of forgotten batches, for reuse
	// remembered counts the batches remembered (slots in use).
	remembered int
	age        ageQueue // slots in the order they were last touched
	newest     int64    // newest packet time seen, Unix ns; math.MinInt64 before any
	noConn     decode.ConnInfo

	// Streaming mode: settling holds the touches of batches whose finding
	// waits for a retry or for Settle; reports the revision state of batches
	// reported and still remembered; fresh the findings decided by Flush.
	settle   int64 // ns
	settling ageQueue
	reports  map[int32]reportState
	// findingIDs counts the streamed findings named (Finding.ID).
	findingIDs uint64
	fresh      []Finding

	findings []Finding
	stats    Stats
	topics   map[topicKey]*TopicStats
	// records holds the records decode read of a remembered batch, by
	// slot; nil while none came (decode.Options.Records off).
	records map[int32][]decode.Record
	// recBudget counts the records held by records and by recs'
	// carriers, at most maxRecordsHeld.
	recBudget *recordBudget
	// recs is the record-level matching state, nil until prints come.
	recs *recState
	// ends holds how the connections of remembered attempts ended
	// (end.go).
	ends connEnds
	// hot holds, per client and partition (partitionKey), the batches
	// still to be matched after a failed or unanswered attempt.
	hot map[uint64]hotPartition
	// epochs holds, per client and partition (partitionKey), the producer
	// ID and epoch of its latest idempotent batch, to see a bump.
	epochs map[uint64]producerEpoch
	// hotUntil is the latest until of hot: past it, all of hot has passed.
	hotUntil int64
	// fetch and txn hold the proof from fetched data and transactions
	// (fetched.go, txn.go).
	fetch fetchState
	txn   txnState
}

// New returns a Detector with opts, defaults filled in.
func New(opts Options) *Detector {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxBatches <= 0 {
		opts.MaxBatches = DefaultMaxBatches
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	if opts.Scope != ScopeConnection && opts.Scope != ScopeClient {
		opts.Scope = ScopeBoth
	}
	echoWindow := int64(opts.EchoWindow)
	if opts.EchoWindow == 0 {
		echoWindow = int64(DefaultEchoWindow)
	}
	return &Detector{
		recBudget:  &recordBudget{},
		opts:       opts,
		echoWindow: echoWindow,
		scope:      opts.Scope,
		seed:       maphash.MakeSeed(),
		window:     int64(opts.Window),
		settle:     int64(opts.Settle),
		reports:    make(map[int32]reportState),
		bySeq:      make(map[uint64]int32),
		byBytes:    make(map[uint64]int32),
		newest:     math.MinInt64,
		stats:      Stats{ByVerdict: make(map[Verdict]int64)},
		topics:     make(map[topicKey]*TopicStats),
	}
}

// Produce takes one complete exchange. Exchanges come in the order they
// completed, not the order they were sent: a retry answered at once can come
// before its unanswered first attempt. x is read during the call only.
func (d *Detector) Produce(x *decode.Exchange) {
	if x == nil {
		return
	}
	d.stats.Exchanges++
	conn := x.Conn
	if conn == nil {
		conn = &d.noConn
	}
	req := unixNano(x.RequestTime)
	seen := req
	var resp int64
	if x.Responded {
		resp = unixNano(x.ResponseTime)
		seen = max(seen, resp)
	}
	first, echoKey, keyed, isEcho := d.echoOf(x, req)
	if isEcho {
		// A copy of a request handed over before (echo.go): no attempt.
		d.fold(x, first)
		if seen > d.newest {
			d.newest = seen
			d.advance()
		}
		return
	}
	if d.opts.Observe != nil {
		d.opts.Observe(x)
	}
	cluster := d.clusterOf(x.Cluster)
	// Forget what the window lost by the time this request was sent, file
	// its batches, then move on to the time of its answer: a resend sent
	// within the window is grouped even if its answer comes after it.
	if req > d.newest {
		d.newest = req
		d.advance()
	}
	var (
		plainOwner owner // the owner of x's batches that are not idempotent
		plainOwned bool
		// clientOwner: the owner of an idempotent batch's records, its
		// client (not its producer ID): an epoch bump or a new producer
		// ID re-sends them under another one (recordmatch.go).
		clientOwner owner
		clientOwned bool
	)
	for i := range x.Batches {
		bt := &x.Batches[i]
		if bt.Corrupt {
			continue // its CRC does not match its bytes: never matched (decode counts it)
		}
		at := attempt{
			reqTime:       req,
			respTime:      resp,
			noResponse:    x.NoResponse,
			conn:          conn,
			clientID:      x.ClientID,
			correlationID: x.CorrelationID,
			timeoutMillis: x.TimeoutMillis,
			version:       x.Version,
			acks:          x.Acks,
			hash:          bt.Hash,
			crc:           bt.CRC,
			responded:     x.Responded,
			cluster:       cluster,
		}
		if r := bt.Response; r != nil {
			at.partResp = true
			at.errorCode = r.ErrorCode
			at.baseOffset = r.BaseOffset
			at.logAppendTime = r.LogAppendTime
		}
		var o owner // of a batch filed by bytes, which record matching shares
		if bt.ProducerID < 0 {
			if !plainOwned {
				// The same for every batch of x: once per exchange.
				plainOwner, plainOwned = d.ownerOf(conn, x.ClientID, false), true
			}
			o = plainOwner
		}
		again := d.add(conn, bt, &at, seen, o)
		if bt.ProducerID < 0 {
			d.matchRecords(o, bt, &at, seen, again)
			continue
		}
		if !clientOwned {
			clientOwner, clientOwned = d.ownerOf(conn, x.ClientID, false), true
		}
		d.matchRecords(clientOwner, bt, &at, seen, again)
	}
	d.sighted(x, req, seen, echoKey, keyed)
	if seen > d.newest {
		d.newest = seen
		d.advance()
	}
}

// Advance tells the Detector that packet time has reached now with no
// exchange, as on an idle capture: the batches whose Window (and, with
// Streaming, whose Settle) has passed by now are decided, as Produce would. A now
// before the newest packet time seen changes nothing. It costs O(1),
// amortised over the batches it decides. A live capture passes the wall
// clock on idle ticks: its packets are stamped by the same clock, so a tick
// decides only what is due (a clock far ahead of the packets' would decide
// everything remembered).
func (d *Detector) Advance(now time.Time) {
	if n := unixNano(now); n > d.newest {
		d.newest = n
		d.advance()
	}
}

// advance decides what is due at d.newest.
func (d *Detector) advance() {
	d.expire()
	d.expireEchoes()
	d.expireRecords()
	if d.opts.Streaming {
		d.settled()
	}
	d.expireEnds()
}

// add files one attempt of one batch under its batch, remembering a new
// batch when none matches. It reports whether the batch was remembered
// already: the attempt is a re-send of it.
func (d *Detector) add(conn *decode.ConnInfo, bt *decode.Batch, at *attempt, seen int64, o owner) (again bool) {
	d.countBatch(bt)

	topic := bt.Topic
	if bt.TopicID != ([16]byte{}) {
		topic = ""
	}
	var (
		slot       int32
		found      bool
		byClient   bool
		keyCluster uint16 // the cluster in the key, when filed apart
		sk         seqKey
		bk         bytesKey
		h          uint64 // the digest of sk or bk
	)
	if bt.ProducerID >= 0 {
		sk = seqKey{owner: d.ownerOf(conn, at.clientID, true), topic: topic, topicID: bt.TopicID, partition: bt.Partition,
			producerEpoch: bt.ProducerEpoch, firstSequence: bt.FirstSequence,
			lastOffsetDelta: bt.LastOffsetDelta, producerID: bt.ProducerID}
		slot, found, h = d.findSeq(sk)
		switch {
		case d.scope == ScopeConnection:
		case found && d.otherProducer(d.slab.at(slot), conn, at),
			!found && d.byClient > 0:
			// Another producer of the same ID and epoch holds (or held)
			// the key: this one is under its client.
			ck := sk
			ck.owner = d.clientOwner(conn, at.clientID)
			if cslot, ok, ch := d.findSeq(ck); ok || found {
				slot, found, h, byClient, sk = cslot, ok, ch, true, ck
			}
		}
		if d.apart(slot, found, at) {
			// Another cluster's batch holds the key: this one is under
			// its cluster.
			ck := sk
			ck.cluster = at.cluster
			if cslot, ok, ch := d.findSeq(ck); ok || found {
				slot, found, h, keyCluster, sk = cslot, ok, ch, at.cluster, ck
			}
		}
	} else {
		bk = bytesKey{owner: o, topic: topic, topicID: bt.TopicID, partition: bt.Partition,
			crc: bt.CRC, hash: bt.Hash}
		slot, found, h = d.findBytes(bk)
		if d.apart(slot, found, at) {
			ck := bk
			ck.cluster = at.cluster
			if cslot, ok, ch := d.findBytes(ck); ok || found {
				slot, found, h, keyCluster, bk = cslot, ok, ch, at.cluster, ck
			}
		}
	}

	if found {
		b := d.slab.at(slot)
		if b.sameRequest(at) {
			return false
		}
		d.stats.Resends++
		if 1+len(b.more) >= MaxAttempts {
			// Counted, not kept: sameRequest and finding stay bounded.
			b.omitted++
			b.last = max(b.last, seen)
			b.gen++
			d.push(slot, b)
			return true
		}
		if b.more == nil && len(d.spare) > 0 {
			b.more = d.spare[len(d.spare)-1]
			d.spare = d.spare[:len(d.spare)-1]
		}
		b.more = append(b.more, *at)
		if b.topic == "" && bt.Topic != "" {
			b.topic = bt.Topic
		}
		if b.cluster == 0 {
			b.cluster = at.cluster
		}
		b.last = max(b.last, seen)
		b.gen++
		d.push(slot, b)
		if d.opts.Streaming {
			d.touched(slot, b)
		}
		return true
	}

	filed := slot != taken // the lookup left the digest h free
	if len(d.free) > 0 {
		slot = d.free[len(d.free)-1]
		d.free = d.free[:len(d.free)-1]
	} else {
		slot = d.slab.grow()
	}
	b := d.slab.at(slot)
	*b = batch{
		topic:           bt.Topic,
		topicID:         bt.TopicID,
		producerID:      bt.ProducerID,
		last:            seen,
		partition:       bt.Partition,
		producerEpoch:   bt.ProducerEpoch,
		magic:           bt.Magic,
		firstSequence:   bt.FirstSequence,
		lastOffsetDelta: bt.LastOffsetDelta,
		numRecords:      bt.NumRecords,
		gen:             b.gen + 1,
		inUse:           true,
		byClient:        byClient,
		cluster:         at.cluster,
		keyCluster:      keyCluster,
		first:           *at,
	}
	if bt.ProducerID >= 0 {
		b.owner = sk.owner
	} else {
		b.owner = bk.owner
	}
	d.keepRecords(slot, bt)
	d.watchBatch(b)
	switch {
	case !filed:
	case bt.ProducerID >= 0:
		d.bySeq[h] = slot
		if byClient {
			d.byClient++
		}
		if keyCluster != 0 {
			d.byCluster++
		}
	default:
		d.byBytes[h] = slot
		if keyCluster != 0 {
			d.byCluster++
		}
	}
	d.remembered++
	d.push(slot, b)
	for d.remembered > d.opts.MaxBatches {
		if !d.evictOldest() {
			break
		}
	}
	return false
}

// reportable reports whether b makes a finding: it was sent more than once
// and, with ScopeClient, on more than one connection.
func (d *Detector) reportable(b *batch) bool {
	return len(b.more) > 0 && (d.scope != ScopeClient || b.spans())
}

func (d *Detector) push(slot int32, b *batch) {
	d.age.Push(queued{time: b.last, slot: slot, gen: b.gen})
}

// expire decides the batches whose last attempt is older than the window.
// The queue is in the order batches were touched, which is close to packet
// time order; a batch behind a newer one waits for it, never the reverse.
func (d *Detector) expire() {
	cutoff := d.newest - d.window
	for {
		q, ok := d.age.Front()
		if !ok {
			break
		}
		b := d.slab.at(q.slot)
		if !b.inUse || b.gen != q.gen {
			d.age.Pop() // stale: the batch was touched again or decided
			continue
		}
		if q.time >= cutoff {
			return
		}
		d.age.Pop()
		d.stats.Expired++
		d.retire(q.slot, true)
	}
}

// evictOldest decides the batch touched least recently, reporting whether
// there was one.
func (d *Detector) evictOldest() bool {
	for {
		q, ok := d.age.Front()
		if !ok {
			break
		}
		d.age.Pop()
		b := d.slab.at(q.slot)
		if !b.inUse || b.gen != q.gen {
			continue
		}
		d.stats.Evicted++
		if age := d.newest - q.time; d.stats.EvictedAge == 0 || time.Duration(age) < d.stats.EvictedAge {
			d.stats.EvictedAge = time.Duration(age)
		}
		d.retire(q.slot, true)
		return true
	}
	return false
}

// retire forgets the batch in slot, deciding a finding if it was sent more
// than once (with Streaming: if it was not reported as it stands); emit passes
// the finding to OnFinding at once, else it waits for Flush.
func (d *Detector) retire(slot int32, emit bool) {
	b := d.slab.at(slot)
	if b.idempotent() {
		unfile(d.bySeq, maphash.Comparable(d.seed, d.seqKey(b)), slot)
		if b.byClient {
			d.byClient--
		}
	} else {
		unfile(d.byBytes, maphash.Comparable(d.seed, d.bytesKey(b)), slot)
	}
	if b.keyCluster != 0 {
		d.byCluster--
	}
	d.decide(slot, b, emit)
}

// decide is retire without taking b out of the batch indexes: Flush, which
// empties them whole, decides every batch with it.
func (d *Detector) decide(slot int32, b *batch, emit bool) {
	d.unwatchBatch(b, !d.opts.Streaming && d.reportable(b))
	switch {
	case d.opts.Streaming:
		if b.dirty {
			f := d.report(slot, b)
			if emit {
				d.emit(f)
			} else {
				d.fresh = append(d.fresh, f)
			}
		}
		if b.reported != verdictNone {
			delete(d.reports, slot)
		}
	case d.reportable(b):
		f := d.finding(b)
		d.attachRecords(&f, slot)
		d.record(&f)
		if emit && d.opts.OnFinding != nil {
			d.opts.OnFinding(f)
		}
	}
	if c := cap(b.more); c > 0 && c <= maxSpareAttempts && len(d.spare) < maxSpare {
		d.spare = append(d.spare, b.more[:0])
	}
	*b = batch{gen: b.gen + 1}
	d.forgetRecords(slot)
	d.remembered--
	d.free = append(d.free, slot)
}

// record keeps f and counts it.
func (d *Detector) record(f *Finding) {
	d.findings = append(d.findings, *f)
	d.countReport(f, verdictNone)
}

// Flush ends the input: it decides every batch still remembered, passes the
// new findings to OnFinding in order, and returns all the findings of the
// run sorted by first attempt time, then connection, topic and partition.
// With Streaming, the new findings are those not reported yet or changed since
// their last report, and Flush returns all the findings of the run (the
// latest revision of each) only with KeepFindings; without it, it returns
// the new ones. The Detector is empty afterwards and may be fed again.
func (d *Detector) Flush() []Finding {
	if d.opts.Streaming {
		return d.flushStreaming()
	}
	start := len(d.findings)
	for i := range d.slab.n {
		if b := d.slab.at(i); b.inUse {
			d.decide(i, b, false)
		}
	}
	clear(d.bySeq)
	clear(d.byBytes)
	d.byClient = 0
	d.byCluster = 0
	d.flushRecords()
	d.applyAll()
	d.resetProof()
	fresh := d.findings[start:]
	slices.SortFunc(fresh, compareFindings)
	if d.opts.OnFinding != nil {
		for _, f := range fresh {
			d.opts.OnFinding(f)
		}
	}
	d.age.Reset()
	if start > 0 { // else fresh was all of them, sorted above
		slices.SortStableFunc(d.findings, compareFindings)
	}
	// The caller's from here on, not a copy (the findings of a long run are
	// megabytes): clipped, so that the next finding appended copies the
	// array first. Sorted, it is not changed by the sort of the next Flush
	// when no finding came in between.
	d.findings = slices.Clip(d.findings)
	return d.findings
}
