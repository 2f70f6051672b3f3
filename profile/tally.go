package profile

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

// What the findings say of a producer's re-sends, tallied as they are
// reported (Profiler.Finding). A live Detector reports a finding again, with
// Revision one more, when another attempt of its batch comes while the batch
// is remembered; the new report replaces the earlier ones. So each finding
// still revisable keeps its own share (pendingFinding), replaced whole by
// its next report, and is added to its producer's tally for good once no
// report can follow: its batch is forgotten Window after its last attempt,
// and a report waits at most Settle. Shares are kept, not subtracted from
// the tally, because the most copies and the gap bounds of a cause are
// maxima and minima, which cannot be taken back.

// tally is what findings say of one producer's re-sends.
type tally struct {
	resent, resends int64
	byVerdict       map[detect.Verdict]int64
	mostCopies      int
	causes          []CauseCount
	renumbered      int64
	changes         []ChangeCount // at most maxProfileValues
}

// pendingFinding is the share of one revisable finding in its producer's
// tally, from its latest report.
type pendingFinding struct {
	prod    *producerState
	last    int64 // newest attempt or answer, Unix ns
	resends int32
	copies  int32  // when duplicated
	seq     uint32 // of its entry in Profiler.queue
	verdict uint8  // Profiler.verdictCode
	causes  []CauseCount
	change  *ChangeCount // nil: no ProducerChange
}

// reportRef is a report in Profiler.queue, stale once the finding is reported
// again (another seq) or gone.
type reportRef struct {
	key uint64
	seq uint32
}

// Finding counts one report of a finding of the same run as the exchanges
// (detect.Options.OnFinding, or each finding Detector.Flush returns). A
// live Detector's report of a finding reported before (the same
// Finding.ID) replaces the earlier one, as long as that one is revisable
// (Options.Revisable); any other finding is tallied at once. It reads f
// only during the call.
func (pr *Profiler) Finding(f *detect.Finding) {
	c, ok := pr.share(f)
	pr.newest = max(pr.newest, c.last)
	k := f.ID // a live Detector names a finding at its first report and keeps the name in its revisions
	if pr.revisable == 0 || k == 0 {
		if ok {
			c.prod.tally.add(&c, pr.verdictOf(c.verdict))
		}
		return
	}
	if !ok {
		// Not (or no longer) a re-send of a profiled producer: an earlier
		// report's share goes (its queue entry is then stale).
		delete(pr.pending, k)
		return
	}
	pr.seq++
	c.seq = pr.seq
	pr.pending[k] = c
	pr.queue.Push(reportRef{key: k, seq: c.seq})
	pr.settle()
}

// Pending counts the findings kept revisable.
func (pr *Profiler) Pending() int { return len(pr.pending) }

// seen moves the newest packet time on to t.
func (pr *Profiler) seen(t time.Time) {
	if !t.IsZero() {
		pr.newest = max(pr.newest, t.UnixNano())
	}
}

// share is f's share in its producer's tally; false when f is not a re-send
// (the application produced its records twice) or its producer is not
// profiled. Its last time is set either way.
func (pr *Profiler) share(f *detect.Finding) (pendingFinding, bool) {
	c := pendingFinding{last: math.MinInt64}
	for i := range f.Attempts {
		a := &f.Attempts[i]
		c.last = max(c.last, a.Time.UnixNano())
		if a.Response != nil {
			c.last = max(c.last, a.Response.Time.UnixNano())
		}
	}
	if f.Kind == detect.KindRecordDuplicate {
		return c, false // the application's doing, not a re-send
	}
	c.prod = pr.m[KeyOf(f.Client.Addr(), f.ClientID, f.ProducerID)]
	if c.prod == nil {
		return c, false
	}
	c.resends = int32(min(max(len(f.Attempts)-1, 0)+f.AttemptsOmitted, math.MaxInt32))
	c.verdict = pr.verdictCode(f.Verdict)
	if f.Verdict == detect.Duplicated {
		c.copies = int32(min(len(f.AppendedOffsets), math.MaxInt32))
	}
	for j := range f.Attempts {
		a := &f.Attempts[j]
		if j+1 < len(f.Attempts) && a.Response != nil && a.Response.ErrorCode != 0 {
			c.prod.markRetried(sendKey{conn: a.ConnID, corr: a.CorrelationID, partition: f.Partition, topic: f.Topic, topicID: f.TopicID}, a.Response.Error)
		}
		if j > 0 && !newProducerID(&f.Attempts[j-1], a) {
			c.causes = addCause(c.causes, &f.Attempts[j-1], a)
		}
	}
	c.change = changeOf(f)
	return c, true
}

// newProducerID reports whether a was sent under another producer ID than
// prev: by another producer instance (no client re-sends its own batch
// under a new producer ID), so not a re-send this producer's settings
// explain; Producer.Changes tells of it, not Causes.
func newProducerID(prev, a *detect.Attempt) bool {
	return prev.Batch != nil && a.Batch != nil && prev.Batch.ProducerID >= 0 && a.Batch.ProducerID >= 0 &&
		prev.Batch.ProducerID != a.Batch.ProducerID
}

// changeOf is how the producer of record-level finding f changed between
// its attempts, nil when it did not (detect.Finding.ProducerChange).
func changeOf(f *detect.Finding) *ChangeCount {
	if f.ProducerChange == "" || len(f.Attempts) == 0 || f.Attempts[0].Batch == nil {
		return nil
	}
	b0 := f.Attempts[0].Batch
	ch := &ChangeCount{Change: f.ProducerChange, ProducerID: b0.ProducerID, Epoch: b0.ProducerEpoch,
		ToProducerID: b0.ProducerID, ToEpoch: b0.ProducerEpoch, Count: 1}
	if f.Verdict == detect.Duplicated {
		ch.Duplicated = 1
	}
	for j := 1; j < len(f.Attempts); j++ {
		a := &f.Attempts[j]
		if b := a.Batch; b != nil && (b.ProducerID != b0.ProducerID || b.ProducerEpoch != b0.ProducerEpoch) {
			ch.ToProducerID, ch.ToEpoch, ch.Cause, ch.Error = b.ProducerID, b.ProducerEpoch, a.Cause, a.CauseError
			break
		}
	}
	return ch
}

// sendKey names one send of a partition's batch: a ProduceRequest (by
// connection and correlation ID) and the partition.
type sendKey struct {
	conn      uint64
	corr      int32
	partition int32
	topic     string
	topicID   [16]byte
}

// maxRetried bounds the sends a producer remembers as retried; beyond it
// each is counted without checking that it was not counted before.
const maxRetried = 1 << 16

// markRetried notes that the send k, answered with the retriable error err,
// was sent again, once however many findings show it.
func (s *producerState) markRetried(k sendKey, err string) {
	if _, ok := s.retried[k]; ok {
		return
	}
	if s.retried == nil {
		s.retried, s.retriedBy = make(map[sendKey]struct{}), make(map[string]int64)
	}
	if len(s.retried) < maxRetried {
		s.retried[k] = struct{}{}
	}
	s.retriedBy[err]++
}

// settle tallies for good, from the front of the queue (the findings
// reported longest ago), those no report can follow any more (newest
// attempt more than Revisable before the newest packet time: the batch is
// forgotten), and, while more than MaxPending are pending, the oldest. As
// with the Detector's queues, a finding behind a newer one waits for it.
// It costs O(1) per report, amortized.
func (pr *Profiler) settle() {
	cutoff := pr.newest - pr.revisable
	for {
		q, ok := pr.queue.Front()
		if !ok {
			break
		}
		if c, ok := pr.pending[q.key]; ok && c.seq == q.seq {
			if c.last >= cutoff && len(pr.pending) <= pr.maxPending {
				break
			}
			c.prod.tally.add(&c, pr.verdictOf(c.verdict))
			delete(pr.pending, q.key)
		}
		pr.queue.Pop()
	}
	// Entries go stale when their findings are reported again: when they
	// outnumber the pending findings, the queue keeps only the live ones,
	// in order.
	if n := pr.queue.Len(); n > 2*len(pr.pending)+minQueue {
		for range n {
			q, _ := pr.queue.Front()
			pr.queue.Pop()
			if c, ok := pr.pending[q.key]; ok && c.seq == q.seq {
				pr.queue.Push(q)
			}
		}
	}
}

// verdictCode is v in one byte, for a pending finding's padding: 1 + its
// index in pr.verdicts, the verdicts seen, v added if new (detect gives a
// handful); 0 for "" or beyond 255 of them.
func (pr *Profiler) verdictCode(v detect.Verdict) uint8 {
	if v == "" {
		return 0
	}
	if i := slices.Index(pr.verdicts, v); i >= 0 {
		return uint8(i + 1)
	}
	if len(pr.verdicts) == math.MaxUint8 {
		return 0
	}
	pr.verdicts = append(pr.verdicts, v)
	return uint8(len(pr.verdicts))
}

// verdictOf is the verdict of code (verdictCode).
func (pr *Profiler) verdictOf(code uint8) detect.Verdict {
	if code == 0 {
		return ""
	}
	return pr.verdicts[code-1]
}

// minQueue is the fewest stale queue entries worth dropping.
const minQueue = 64

// add adds the share c, of a finding of verdict v, to t.
func (t *tally) add(c *pendingFinding, v detect.Verdict) {
	if t.byVerdict == nil {
		t.byVerdict = make(map[detect.Verdict]int64)
	}
	t.resent++
	t.resends += int64(c.resends)
	t.byVerdict[v]++
	t.mostCopies = max(t.mostCopies, int(c.copies))
	for _, cc := range c.causes {
		t.causes = mergeCause(t.causes, cc)
	}
	if ch := c.change; ch != nil {
		t.renumbered++
		t.changes = mergeChange(t.changes, *ch)
	}
}

// mergeChange adds the counts of c to changes, under the same change, IDs,
// epochs and cause; a kind beyond maxProfileValues is counted in
// Producer.Renumbered only.
func mergeChange(changes []ChangeCount, c ChangeCount) []ChangeCount {
	for i := range changes {
		e := &changes[i]
		if e.Change == c.Change && e.ProducerID == c.ProducerID && e.Epoch == c.Epoch && e.ToProducerID == c.ToProducerID &&
			e.ToEpoch == c.ToEpoch && e.Cause == c.Cause && e.Error == c.Error {
			e.Count += c.Count
			e.Duplicated += c.Duplicated
			return changes
		}
	}
	if len(changes) >= maxProfileValues {
		return changes
	}
	return append(changes, c)
}

// clone is a copy of t that shares nothing with it.
func (t *tally) clone() *tally {
	c := *t
	c.byVerdict = maps.Clone(t.byVerdict)
	c.causes = slices.Clone(t.causes)
	c.changes = slices.Clone(t.changes)
	return &c
}
