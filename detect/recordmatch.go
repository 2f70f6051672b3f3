package detect

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/internal/fifo"
)

// Record-level matching finds records sent again in batches that are not
// the same bytes: segmentio/kafka-go and kafkajs encode every retry anew,
// IBM/sarama and librdkafka put retried records into new batches beside
// newer ones, and an application may produce one message twice. It runs on
// the record prints decode computes (decode.Options.RecordPrints). An
// idempotent batch rebuilt for a retry keeps its producer ID, epoch and
// sequence span, which the batch-level matching already groups, so two
// copies of a record of one producer ID and epoch at the same first
// sequence are never matched here; but an idempotent producer that bumps
// its epoch (librdkafka after a timeout, KIP-360) or takes a new producer
// ID (InitProducerId again) re-sends records under another one, which the
// broker cannot deduplicate: those are matched, filed under the client (IP
// and client.id) rather than the producer ID, and the finding says the
// producer changed (Finding.ProducerChange).
//
// Every print is filed under its partition and its client, as batches are
// (see owner), in an index of bounded size; a print found again in another
// batch, whose bytes differ from the earlier copy's, makes the record a
// duplicate (recDup) holding each copy: the batch attempt that carried it
// (a carrier) and its offset delta there. A duplicate is decided once no
// copy came for Window (with Streaming: for Settle), and the duplicates decided
// together that were carried by the same attempts make one Finding.

// DefaultMaxRecords is the default of Options.MaxRecords.
const DefaultMaxRecords = 1 << 16

// recordWindow bounds how long, in packet time, record prints are
// remembered (Window, if shorter): clients retry within their delivery
// timeout (two minutes by default in the Java client and librdkafka),
// so prints kept longer would only hold memory.
const recordWindow = 2 * time.Minute

// recWindow is the record prints' window, in ns.
func (d *Detector) recWindow() int64 { return min(d.window, int64(recordWindow)) }

// MaxFindingRecords is the most records a record-level Finding lists; the
// others are counted in Finding.RecordsOmitted.
const MaxFindingRecords = 100

// recEntry is one record print remembered: where its newest copy was seen.
type recEntry struct {
	last    int64 // packet time of the newest copy, Unix ns
	carrier int32 // the carrier of the newest copy
	delta   int32 // the record's offset delta there
	index   int32 // its position in that batch
	dup     int32 // index in recState.dups; -1 while seen once
}

// carrier is one attempt of one batch whose records are remembered. It is
// freed when no entry and no duplicate refers to it.
type carrier struct {
	at         attempt
	topic      string
	topicID    [16]byte
	partition  int32
	numRecords int32
	length     int
	magic      int8
	refs       int32
	// producerID (-1: not idempotent), producerEpoch and firstSequence
	// are the batch's.
	producerID    int64
	producerEpoch int16
	firstSequence int32
	// records are the first records of the batch decode read
	// (decode.Options.Records), to show the duplicates' content.
	records []decode.Record
}

// recCopy is one copy of a duplicated record.
type recCopy struct {
	carrier int32
	delta   int32
	index   int32
}

// recDup is a record seen in two or more batches.
type recDup struct {
	key    uint64 // the print's key in recState.entries
	print  uint64 // the record's print, decode.RecordPrint.Hash
	copies []recCopy
	last   int64
	gen    uint32
	// revision counts the reports of the duplicate; reported is the
	// verdict of the last one (verdictNone before the first).
	revision int32
	reported verdictCode
	// pending: a copy came since the last report; remembered: its print
	// is still remembered (once not, it is freed after its last report).
	pending    bool
	remembered bool
	// queued: in recState.decided, waiting to be grouped.
	queued bool
	// id is the Finding.ID of the streamed finding that reported it.
	id uint64
}

// recQueued is a print, or a duplicate, at a packet time.
type recQueued struct {
	time int64
	key  uint64 // the print's key, for the entry queue
	dup  int32  // the duplicate, for the decision queue
	gen  uint32
}

// recState is the record-level matching state of a Detector, made when the
// first prints come.
type recState struct {
	// budget counts the records the carriers hold (the Detector's).
	budget *recordBudget
	// sorted and repeated are scratch for repeatedIn.
	sorted, repeated []uint64
	entries          map[uint64]recEntry
	order            fifo.Queue[recQueued] // entries in the order last touched
	carriers         slab[carrier]
	freeC            []int32
	dups             []recDup
	freeD            []int32
	decideQ          fifo.Queue[recQueued] // duplicates in the order last touched
	decided          []int32               // duplicates decided, waiting to be grouped
}

// hotPartition is a client's partition after a failed or unanswered
// attempt: the next budget batches (until the window passes) are matched
// too, since a retry of the failed records goes there.
type hotPartition struct {
	until  int64
	budget int32
	// failures counts the failed attempts it is hot for whose batch has
	// not come again as the same bytes.
	failures int32
}

// producerEpoch is a producer ID and epoch.
type producerEpoch struct {
	id    int64
	epoch int16
}

const (
	// hotBudget is how many batches after each failed attempt are
	// matched: the retry, and the batches a re-batching client (sarama)
	// spreads the retried records and newer ones over. A fleet's hosts
	// print as many (fleet.HotBudget; a test holds the two equal, since
	// importing fleet here would make report depend on kgo).
	hotBudget = 8
	// maxHot bounds the hot partitions remembered; beyond it they are
	// all forgotten (a retry after that is not matched at record level).
	maxHot = 1 << 16
)

// matchRecords decides whether the records of one attempt of bt (a
// producer that is not idempotent) are matched, and files them if so; again
// says the attempt re-sent a batch remembered (the same bytes).
func (d *Detector) matchRecords(o owner, bt *decode.Batch, at *attempt, seen int64, again bool) {
	failed := at.acks != 0 && (!at.responded || !at.partResp || at.errorCode != 0)
	want := d.opts.AllRecords
	if len(d.hot) > 0 && d.hotUntil < seen {
		clear(d.hot) // every one has passed its window, sent to again or not
	}
	if !failed && !want && len(d.hot) == 0 && bt.ProducerID < 0 {
		return // the common case: nothing failed lately
	}
	part := d.partitionKey(o, bt, at)
	bumped := d.epochChange(part, bt)
	switch h, ok := d.hot[part]; {
	case failed || bumped:
		if d.hot == nil || len(d.hot) >= maxHot {
			d.hot = make(map[uint64]hotPartition)
		}
		if !ok || h.until < seen {
			h = hotPartition{}
		}
		h.until = seen + d.recWindow()
		d.hotUntil = max(d.hotUntil, h.until)
		h.budget = min(h.budget+hotBudget, 1<<20)
		h.failures = min(h.failures+1, 1<<20)
		d.hot[part] = h
		want = true
	case ok && (h.until < seen || h.budget <= 0):
		delete(d.hot, part)
	case ok && again:
		// A failed batch came again as the same bytes and was answered
		// (librdkafka, kgo): the retry the partition was hot for came
		// whole, and its batch finding has it. The batches after it need
		// no prints for that failure: what is left is at most the
		// budget of the others still waiting for their retry. This one
		// is printed all the same: if the batch it repeats had itself
		// re-batched records of an earlier one (refused by an old
		// leader, then sent again as the same bytes to the new one), it
		// is another copy of those records (addRecords).
		if h.failures--; h.failures <= 0 {
			delete(d.hot, part)
		} else {
			h.budget = min(h.budget, h.failures*hotBudget)
			d.hot[part] = h
		}
		want = true
	case ok:
		h.budget--
		d.hot[part] = h
		want = true
	}
	if !want {
		return
	}
	// detect's one call back into decode: only detect knows which batches
	// it matches by record, and printing them all would decompress every
	// batch (decode.Printer says why it is a call).
	if prints := bt.RecordPrints(); len(prints) > 0 {
		d.addRecords(part, bt, at, seen, prints)
	}
}

// epochChange reports whether bt, of an idempotent producer, has another
// producer ID or epoch than the client's latest batch on its partition
// (part), and remembers bt's. A bump makes the partition hot whether or not
// the attempt that caused it was handed over yet: its exchange may complete
// only later (answered late, or when its connection closes), and the
// batches of the new epoch that re-send its records must be printed when
// they come.
func (d *Detector) epochChange(part uint64, bt *decode.Batch) bool {
	if bt.ProducerID < 0 {
		return false
	}
	now := producerEpoch{id: bt.ProducerID, epoch: bt.ProducerEpoch}
	if d.epochs == nil || len(d.epochs) >= maxHot {
		d.epochs = make(map[uint64]producerEpoch)
	}
	was, ok := d.epochs[part]
	d.epochs[part] = now
	return ok && was != now
}

// addRecords files the prints of one attempt of bt.
func (d *Detector) addRecords(part uint64, bt *decode.Batch, at *attempt, seen int64, prints []decode.RecordPrint) {
	rs := d.recs
	if rs == nil {
		rs = &recState{entries: make(map[uint64]recEntry), budget: d.recBudget}
		d.recs = rs
	}
	ci := rs.newCarrier()
	c := rs.carriers.at(ci)
	*c = carrier{
		at:         *at,
		topic:      bt.Topic,
		topicID:    bt.TopicID,
		partition:  bt.Partition,
		numRecords: bt.NumRecords,
		length:     bt.Length,
		magic:      bt.Magic,

		producerID:    bt.ProducerID,
		producerEpoch: bt.ProducerEpoch,
		firstSequence: bt.FirstSequence,
	}
	if len(bt.Records) > 0 {
		if rs.budget.take(bt.Records) {
			c.records = bt.Records
		} else {
			d.stats.RecordsNotKept++
		}
	}
	repeated := rs.repeatedIn(prints)
	for _, p := range prints {
		d.stats.RecordPrints++
		if len(repeated) > 0 {
			if _, ok := slices.BinarySearch(repeated, p.Hash); ok {
				// Not distinctive: a record whose content its own batch
				// holds again (empty records, a constant value) cannot
				// tell a re-send from new records of the same content.
				d.stats.RecordsAmbiguous++
				continue
			}
		}
		k := mixKey(part, p.Hash)
		e, ok := rs.entries[k]
		if !ok {
			rs.entries[k] = recEntry{last: seen, carrier: ci, delta: p.OffsetDelta, index: p.Index, dup: -1}
			rs.carriers.at(ci).refs++
			rs.order.Push(recQueued{time: seen, key: k})
			continue
		}
		prev := rs.carriers.at(e.carrier)
		if e.carrier == ci {
			continue
		}
		if e.dup < 0 && (sameBytes(prev, rs.carriers.at(ci)) || sameSequence(prev, rs.carriers.at(ci))) {
			// A batch re-sent as the same bytes, or an idempotent batch
			// re-sent at its sequence: the batch-level finding covers
			// that (records repeated in one batch were left out above).
			// Once the record is known in batches of other bytes, though,
			// another attempt of its newest batch is one more copy: a
			// re-batched retry refused by the old leader and sent again
			// as the same bytes to the new one (librdkafka after
			// NOT_LEADER_OR_FOLLOWER) is where the log got it twice.
			continue
		}
		if e.dup < 0 {
			e.dup = rs.newDup(k, p.Hash)
			dp := &rs.dups[e.dup]
			dp.copies = append(dp.copies, recCopy{carrier: e.carrier, delta: e.delta, index: e.index})
			prev.refs++
		}
		dp := &rs.dups[e.dup]
		if len(dp.copies) < MaxAttempts {
			dp.copies = append(dp.copies, recCopy{carrier: ci, delta: p.OffsetDelta, index: p.Index})
			rs.carriers.at(ci).refs++
		}
		dp.last = max(dp.last, seen)
		dp.gen++
		dp.pending = true
		rs.decideQ.Push(recQueued{time: dp.last, dup: e.dup, gen: dp.gen})
		// The entry now points at the newest copy.
		rs.release(e.carrier)
		e.carrier, e.delta, e.index, e.last = ci, p.OffsetDelta, p.Index, seen
		rs.carriers.at(ci).refs++
		rs.entries[k] = e
		rs.order.Push(recQueued{time: seen, key: k})
	}
	if rs.carriers.at(ci).refs == 0 {
		rs.free(ci)
	}
	for len(rs.entries) > d.opts.MaxRecords {
		if !d.evictRecord() {
			break
		}
	}
}

// repeatedIn returns the prints that occur more than once among prints,
// sorted, in scratch space valid until the next call.
func (rs *recState) repeatedIn(prints []decode.RecordPrint) []uint64 {
	rs.sorted, rs.repeated = rs.sorted[:0], rs.repeated[:0]
	for _, p := range prints {
		rs.sorted = append(rs.sorted, p.Hash)
	}
	slices.Sort(rs.sorted)
	for i := 1; i < len(rs.sorted); i++ {
		if h := rs.sorted[i]; h == rs.sorted[i-1] && (len(rs.repeated) == 0 || rs.repeated[len(rs.repeated)-1] != h) {
			rs.repeated = append(rs.repeated, h)
		}
	}
	return rs.repeated
}

// sameBytes reports whether two attempts carried the same batch bytes.
func sameBytes(a, b *carrier) bool {
	return a.at.crc == b.at.crc && a.at.hash == b.at.hash && a.length == b.length
}

// sameSequence reports whether two attempts carried one idempotent
// producer's batch at the same producer ID, epoch and first sequence: the
// broker deduplicates them, and the batch-level matching groups them.
func sameSequence(a, b *carrier) bool {
	return a.producerID >= 0 && a.producerID == b.producerID && a.producerEpoch == b.producerEpoch &&
		a.firstSequence == b.firstSequence
}

// partitionKey hashes who may send a record again (as owner does for
// batches), the partition it went to and its cluster, or its broker where
// the cluster is not known (cluster.go).
func (d *Detector) partitionKey(o owner, bt *decode.Batch, at *attempt) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	d.writePlace(&h, at)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], o.conn)
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], o.client)
	h.Write(b[:])
	if bt.TopicID != ([16]byte{}) {
		h.Write(bt.TopicID[:])
	} else {
		h.WriteString(bt.Topic)
	}
	binary.LittleEndian.PutUint32(b[:4], uint32(bt.Partition))
	h.Write(b[:4])
	return h.Sum64()
}

// mixKey combines a partition key with a record print: a print's hash is
// xxhash64 already, so one multiply-and-xor mixes them well enough for a
// map key (two records would have to collide in 64 bits).
func mixKey(part, print uint64) uint64 {
	return print ^ (part*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019)
}

func (rs *recState) newCarrier() int32 {
	if n := len(rs.freeC); n > 0 {
		ci := rs.freeC[n-1]
		rs.freeC = rs.freeC[:n-1]
		return ci
	}
	return rs.carriers.grow()
}

func (rs *recState) release(ci int32) {
	if c := rs.carriers.at(ci); c.refs > 0 {
		if c.refs--; c.refs == 0 {
			rs.free(ci)
		}
	}
}

// free forgets carrier ci, no longer referred to, and its records.
func (rs *recState) free(ci int32) {
	c := rs.carriers.at(ci)
	rs.budget.give(c.records)
	*c = carrier{}
	rs.freeC = append(rs.freeC, ci)
}

func (rs *recState) newDup(key, print uint64) int32 {
	var i int32
	if n := len(rs.freeD); n > 0 {
		i = rs.freeD[n-1]
		rs.freeD = rs.freeD[:n-1]
	} else {
		rs.dups = append(rs.dups, recDup{})
		i = int32(len(rs.dups) - 1)
	}
	dp := &rs.dups[i]
	*dp = recDup{key: key, print: print, copies: dp.copies[:0], gen: dp.gen + 1, remembered: true}
	return i
}

// freeDup forgets a duplicate and its copies' carriers.
func (rs *recState) freeDup(i int32) {
	dp := &rs.dups[i]
	for _, c := range dp.copies {
		rs.release(c.carrier)
	}
	dp.copies = dp.copies[:0]
	dp.remembered = false
	dp.gen++
	rs.freeD = append(rs.freeD, i)
}

// expireRecords forgets the prints whose newest copy is older than the
// window, after deciding the duplicates that are due.
func (d *Detector) expireRecords() {
	rs := d.recs
	if rs == nil {
		return
	}
	d.decideRecords(false)
	d.groupDecided(true)
	cutoff := d.newest - d.recWindow()
	for {
		q, ok := rs.order.Front()
		if !ok {
			break
		}
		e, ok := rs.entries[q.key]
		if !ok || e.last != q.time {
			rs.order.Pop() // stale: forgotten, or seen again since
			continue
		}
		if q.time >= cutoff {
			break
		}
		rs.order.Pop()
		d.forgetEntry(q.key, e)
	}
	d.groupDecided(true)
}

// evictRecord forgets the print touched least recently (Options.MaxRecords
// reached), deciding its duplicate, and every other one waiting, now; it
// reports whether there was one.
func (d *Detector) evictRecord() bool {
	rs := d.recs
	for {
		q, ok := rs.order.Front()
		if !ok {
			break
		}
		rs.order.Pop()
		e, ok := rs.entries[q.key]
		if !ok || e.last != q.time {
			continue
		}
		d.stats.RecordsEvicted++
		if e.dup >= 0 && rs.dups[e.dup].pending {
			// Decide every duplicate waiting now, so that the records of
			// one re-sent batch, evicted one by one, still make one
			// finding rather than one each.
			d.decideRecords(true)
		}
		d.forgetEntry(q.key, e)
		d.groupDecided(true)
		return true
	}
	return false
}

// forgetEntry drops one print; its duplicate, if any, is decided now if a
// copy came since its last report, and freed once reported.
func (d *Detector) forgetEntry(key uint64, e recEntry) {
	rs := d.recs
	delete(rs.entries, key)
	rs.release(e.carrier)
	if e.dup < 0 {
		return
	}
	dp := &rs.dups[e.dup]
	dp.remembered = false
	switch {
	case dp.pending:
		rs.decide(e.dup)
	case !dp.queued:
		rs.freeDup(e.dup) // grouping frees a queued one
	}
}

// decideRecords moves the duplicates whose newest copy is older than
// Window (with Streaming: Settle) to rs.decided; all, with flush.
func (d *Detector) decideRecords(flush bool) {
	rs := d.recs
	wait := d.recWindow()
	if d.opts.Streaming {
		wait = min(d.settle, wait)
	}
	cutoff := d.newest - wait
	for {
		q, ok := rs.decideQ.Front()
		if !ok {
			break
		}
		dp := &rs.dups[q.dup]
		if dp.gen != q.gen || !dp.pending {
			rs.decideQ.Pop() // stale: another copy came, or decided already
			continue
		}
		if !flush && q.time >= cutoff {
			break
		}
		rs.decideQ.Pop()
		rs.decide(q.dup)
	}
}

// decide queues duplicate i to be grouped into a finding.
func (rs *recState) decide(i int32) {
	dp := &rs.dups[i]
	dp.pending = false
	dp.queued = true
	rs.decided = append(rs.decided, i)
}

// flushRecords decides every duplicate and forgets every print.
func (d *Detector) flushRecords() {
	clear(d.hot) // the batches after the input's failures are all in
	rs := d.recs
	if rs == nil {
		return
	}
	d.decideRecords(true)
	d.groupDecided(false)
	for k, e := range rs.entries {
		d.forgetEntry(k, e)
	}
	rs.order.Reset()
	rs.decideQ.Reset()
	d.groupDecided(false)
}
