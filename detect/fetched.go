package detect

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// Proof from the consumers' side: the batches consumers and followers
// fetched (Detector.Fetch, which satisfies decode.FetchSink) show where the
// log holds a batch. A batch fetched at two distinct base offsets is in the
// log twice; one fetched at a single offset, by fetches that read on without
// a hole from there up to the high watermark a fetch reported after every
// attempt was answered (or sent), is in the log once.
//
// A fetched batch is the produced one when it went to the same partition
// (topic names, or topic IDs, equal when both sides know them) and, for an
// idempotent producer, has the same producer ID, epoch, first sequence and
// last offset delta; otherwise the same CRC and last offset delta. The CRC
// covers everything but the base offset and leader epoch, which the broker
// sets, so a batch the broker stored as sent keeps it (a topic with
// LogAppendTime, or recompressing on the broker, changes it: such
// non-idempotent batches are not recognised in fetched data).
//
// Memory: fetched offsets are kept only for batches the Detector remembers
// or holds a finding for (at most 8 offsets each), and per partition a
// bounded set of fetched offset ranges and high watermarks.

// Proof says which part of the capture decided a finding's verdict. Its
// values are printed as they are (the JSON key "evidence").
type Proof string

const (
	// ProofProduce: the produce responses alone.
	ProofProduce Proof = "produce_responses"
	// ProofFetch: the fetched data alone.
	ProofFetch Proof = "fetched_data"
	// ProofBoth: both, each confirming the other, or neither alone
	// enough (one offset in a response, another in fetched data).
	ProofBoth Proof = "both"
)

// WireExchange names one request and its response on the wire that a
// finding relies on besides its attempts (a fetch that showed a copy, the
// EndTxn that ended its transaction).
type WireExchange struct {
	ConnID       uint64
	Client       netip.AddrPort
	Broker       netip.AddrPort
	RequestTime  time.Time
	ResponseTime time.Time // zero when not answered in the capture
}

// Bounds of the fetch proof.
const (
	maxFetchedCopies = 8       // distinct offsets kept per batch
	maxCoverRanges   = 64      // fetched offset ranges kept per partition
	maxHWMSamples    = 256     // rising high watermarks kept per partition
	maxCoverParts    = 1 << 16 // partitions whose fetches are tracked
)

// fpKey identifies a batch across producers and consumers: see the doc
// comment above. For an idempotent batch crc is zero. A produced batch's
// last offset delta is its record count less one (compaction alone makes
// them differ, and a compacted batch is not the one sent).
type fpKey struct {
	partition       int32
	crc             uint32
	producerID      int64
	producerEpoch   int16
	firstSequence   int32
	lastOffsetDelta int32
}

func fpOf(partition int32, producerID int64, epoch int16, seq, lastDelta int32, crc uint32) fpKey {
	if producerID >= 0 {
		return fpKey{partition: partition, producerID: producerID, producerEpoch: epoch, firstSequence: seq, lastOffsetDelta: lastDelta}
	}
	return fpKey{partition: partition, crc: crc, producerID: -1, lastOffsetDelta: lastDelta}
}

// watched is a batch whose fetched copies are looked for.
type watched struct {
	refs    int32 // remembered batches and kept findings referring to it
	topic   string
	topicID [16]byte
	copies  []fetchedCopy
}

type fetchedCopy struct {
	offset int64
	ref    WireExchange
}

// partKey names a partition by topic name, or by ID when no name is known.
type partKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

func partOf(topic string, id [16]byte, partition int32) partKey {
	if topic != "" {
		return partKey{topic: topic, partition: partition}
	}
	return partKey{topicID: id, partition: partition}
}

// cover is what the fetches of one partition read: merged offset ranges
// [from, to), and the high watermarks reported, rising, with their times.
type cover struct {
	ranges [][2]int64
	hwm    []hwmSample
}

type hwmSample struct {
	time, hwm int64
}

// fetchState is the Detector's proof from fetches. Batches are watched only
// from the first FetchResponse on (active): most captures hold none, and
// watching every batch would cost a map entry each; at the first one, the
// batches remembered and the findings kept are all watched at once, which
// is the same, since no fetch before it could show any.
type fetchState struct {
	active bool
	watch  map[fpKey]*watched
	covers map[partKey]*cover
	// applied counts the leading Detector.findings the fetch and
	// transaction proof was applied to (without Streaming).
	applied int
}

func (s *fetchState) init() {
	if s.watch == nil {
		s.watch = make(map[fpKey]*watched)
		s.covers = make(map[partKey]*cover)
	}
}

// fp is the fingerprint of a batch finding's batch, as batch.fp.
func (f *Finding) fp() fpKey {
	return fpOf(f.Partition, f.ProducerID, f.ProducerEpoch, f.FirstSequence, f.NumRecords-1, f.BatchCRC)
}

func (b *batch) fp() fpKey {
	return fpOf(b.partition, b.producerID, b.producerEpoch, b.firstSequence, b.numRecords-1, b.first.crc)
}

// watchBatch starts looking for the fetched copies of b, a batch just
// remembered.
func (d *Detector) watchBatch(b *batch) {
	if d.fetch.active {
		d.watchKey(b.fp(), b.topic, b.topicID)
	}
}

func (d *Detector) watchKey(k fpKey, topic string, id [16]byte) {
	w := d.fetch.watch[k]
	if w == nil {
		w = &watched{topic: topic, topicID: id}
		d.fetch.watch[k] = w
	}
	w.refs++
}

// activateWatch starts watching, at the first fetch: every batch
// remembered, and every batch finding kept without its proof yet.
func (d *Detector) activateWatch() {
	d.fetch.init()
	d.fetch.active = true
	for i := range d.slab.n {
		if b := d.slab.at(i); b.inUse {
			d.watchBatch(b)
		}
	}
	for i := d.fetch.applied; i < len(d.findings); i++ {
		if f := &d.findings[i]; f.Kind == KindBatch {
			d.watchKey(f.fp(), f.Topic, f.TopicID)
		}
	}
}

// unwatchBatch stops looking for b's copies unless keep (its finding is
// kept until Flush).
func (d *Detector) unwatchBatch(b *batch, keep bool) {
	if keep || !d.fetch.active {
		return
	}
	k := b.fp()
	if w := d.fetch.watch[k]; w != nil {
		if w.refs--; w.refs <= 0 {
			delete(d.fetch.watch, k)
		}
	}
}

// sameTopic says whether two partitions' topics may be one: names equal
// when both are known, else IDs equal when both are known.
func sameTopic(t1 string, id1 [16]byte, t2 string, id2 [16]byte) bool {
	switch {
	case t1 != "" && t2 != "":
		return t1 == t2
	case id1 != ([16]byte{}) && id2 != ([16]byte{}):
		return id1 == id2
	}
	return true
}

// Fetch takes the batches of one FetchResponse; it satisfies
// decode.FetchSink. f is read during the call only.
func (d *Detector) Fetch(f *decode.Fetch) {
	if f == nil {
		return
	}
	if !d.fetch.active {
		d.activateWatch()
	}
	ref := wireOf(f.Conn, f.RequestTime, f.ResponseTime)
	t := unixNano(f.ResponseTime)
	for i := range f.Partitions {
		p := &f.Partitions[i]
		if p.ErrorCode != 0 {
			continue
		}
		c := d.coverOf(partOf(p.Topic, p.TopicID, p.Partition), true)
		if c != nil {
			c.sample(t, p.HighWatermark)
		}
		for j := range p.Batches {
			fb := &p.Batches[j]
			if fb.Corrupt {
				continue // its bytes are not what was written: no evidence
			}
			if c != nil && fb.LastOffsetDelta >= 0 {
				c.add(fb.BaseOffset, fb.BaseOffset+int64(fb.LastOffsetDelta)+1)
			}
			if fb.Attributes&0x20 != 0 {
				continue // control batch (commit or abort marker)
			}
			w := d.fetch.watch[fpOf(p.Partition, fb.ProducerID, fb.ProducerEpoch, fb.FirstSequence, fb.LastOffsetDelta, fb.CRC)]
			if w == nil || !sameTopic(w.topic, w.topicID, p.Topic, p.TopicID) {
				continue
			}
			if len(w.copies) < maxFetchedCopies && !slices.ContainsFunc(w.copies, func(c fetchedCopy) bool { return c.offset == fb.BaseOffset }) {
				w.copies = append(w.copies, fetchedCopy{offset: fb.BaseOffset, ref: ref})
			}
		}
	}
}

// coverOf returns the cover of k, made if make and within bounds.
func (d *Detector) coverOf(k partKey, make bool) *cover {
	c := d.fetch.covers[k]
	if c == nil && make && len(d.fetch.covers) < maxCoverParts {
		c = &cover{}
		d.fetch.covers[k] = c
	}
	return c
}

// sample records a high watermark reported at time t, if higher than the
// last one.
func (c *cover) sample(t, hwm int64) {
	if n := len(c.hwm); n > 0 && hwm <= c.hwm[n-1].hwm {
		return
	}
	if len(c.hwm) >= maxHWMSamples {
		c.hwm = c.hwm[:copy(c.hwm, c.hwm[1:])]
	}
	c.hwm = append(c.hwm, hwmSample{t, hwm})
}

// add merges [from, to) into the ranges; beyond the bound the lowest range
// is dropped.
func (c *cover) add(from, to int64) {
	if to <= from {
		return
	}
	// Most fetches read on from the last range.
	if n := len(c.ranges); n > 0 && from >= c.ranges[n-1][0] && from <= c.ranges[n-1][1] {
		c.ranges[n-1][1] = max(c.ranges[n-1][1], to)
		return
	}
	i, _ := slices.BinarySearchFunc(c.ranges, from, func(r [2]int64, v int64) int { return cmp.Compare(r[0], v) })
	c.ranges = slices.Insert(c.ranges, i, [2]int64{from, to})
	// Merge around i.
	out := c.ranges[:0]
	for _, r := range c.ranges {
		if n := len(out); n > 0 && r[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	c.ranges = out
	if len(c.ranges) > maxCoverRanges {
		c.ranges = c.ranges[:copy(c.ranges, c.ranges[1:])]
	}
}

// covers reports whether the fetches read every offset from off up to the
// high watermark reported first at or after time after, returning it.
func (c *cover) covers(off, after int64) (int64, bool) {
	i := slices.IndexFunc(c.hwm, func(s hwmSample) bool { return s.time >= after })
	if i < 0 {
		return 0, false
	}
	h := c.hwm[i].hwm
	if h <= off {
		return h, false
	}
	for _, r := range c.ranges {
		if r[0] <= off && r[1] >= h {
			return h, true
		}
	}
	return h, false
}

// applyFetched decides f's verdict anew with the fetched copies of its
// batch, and sets Proof, FetchedOffsets and Fetches.
func (d *Detector) applyFetched(f *Finding) {
	f.Proof = ProofProduce
	if f.Kind != KindBatch {
		return // fetched batches show batch bytes, not records re-batched
	}
	w := d.fetch.watch[f.fp()]
	if w == nil || len(w.copies) == 0 {
		return
	}
	copies := slices.Clone(w.copies)
	slices.SortFunc(copies, func(a, b fetchedCopy) int { return cmp.Compare(a.offset, b.offset) })
	f.FetchedOffsets = make([]int64, len(copies))
	f.Fetches = make([]WireExchange, len(copies))
	for i, c := range copies {
		f.FetchedOffsets[i], f.Fetches[i] = c.offset, c.ref
	}
	union := slices.Clone(f.AppendedOffsets)
	for _, o := range f.FetchedOffsets {
		if !slices.Contains(union, o) {
			union = append(union, o)
		}
	}
	slices.Sort(union)
	fetched := "fetched data holds the batch at offset"
	if len(copies) > 1 {
		fetched += "s"
	}
	fetched += " " + joinInts(f.FetchedOffsets)
	byProduce := len(f.AppendedOffsets) >= 2

	switch {
	case len(union) >= 2:
		held := ": the log holds the batch " + times(len(union))
		switch {
		case byProduce && len(union) > len(f.AppendedOffsets):
			f.Proof = ProofBoth
			f.Reason += "; " + fetched + held
		case byProduce && len(copies) >= 2:
			f.Proof = ProofBoth
			f.Reason += "; " + fetched + ", confirming it"
		case byProduce:
			f.Reason += "; " + fetched
		case len(copies) >= 2:
			f.Proof = ProofFetch
			f.Reason = fetched + held + " (" + f.Reason + ")"
		default:
			f.Proof = ProofBoth
			f.Reason = "the responses show the batch at offset " + joinInts(f.AppendedOffsets) + " and " + fetched +
				held + " (" + f.Reason + ")"
		}
		f.Verdict = Duplicated
		f.AppendedOffsets = union
	default:
		off := copies[0].offset
		c := d.coverOf(partOf(f.Topic, f.TopicID, f.Partition), false)
		if c == nil && f.Topic != "" && f.TopicID != ([16]byte{}) {
			c = d.coverOf(partOf("", f.TopicID, f.Partition), false)
		}
		hwm, whole := int64(0), false
		if c != nil {
			hwm, whole = c.covers(off, f.settledAt())
		}
		if !whole {
			f.Reason += "; " + fetched + " (the fetches did not read on to where a second copy would be)"
			return
		}
		once := fetched + " and nowhere else up to the high watermark " + strconv.FormatInt(hwm, 10) +
			" reported after the last attempt"
		switch f.Verdict {
		case Single, Deduplicated:
			f.Proof = ProofBoth
			f.Reason += "; " + once + ", confirming it"
		case Duplicated:
			// The responses name two offsets; the log read back once.
			f.Reason += "; yet " + once
		default:
			f.Proof = ProofFetch
			f.Reason = once + ": the log holds the batch once (" + f.Reason + ")"
			f.Verdict = Single
			f.AppendedOffsets = union
		}
	}
}

// settledAt is the packet time, Unix ns, after which every attempt of f was
// answered or, unanswered, sent.
func (f *Finding) settledAt() int64 {
	var t int64
	for _, a := range f.Attempts {
		t = max(t, unixNano(a.Time))
		if a.Response != nil {
			t = max(t, unixNano(a.Response.Time))
		}
	}
	return t
}

// applyAll applies the fetch and transaction proof to the findings not
// yet given it (without Streaming), moving the verdict counts when a verdict
// changes.
func (d *Detector) applyAll() {
	for i := d.fetch.applied; i < len(d.findings); i++ {
		f := &d.findings[i]
		before := f.Verdict
		d.applyFetched(f)
		d.applyTxn(f)
		if f.Verdict != before {
			d.moveVerdict(f, before)
		}
	}
	d.fetch.applied = len(d.findings)
}

// resetProof forgets the fetch and transaction state, at Flush.
func (d *Detector) resetProof() {
	d.fetch.watch, d.fetch.covers, d.fetch.active = nil, nil, false
	d.txn = txnState{}
}
