package detect

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Streaming mode (Options.Streaming): a finding is reported once decided,
// and again when a later attempt changes it while its batch is remembered.

// reportState is what streaming mode keeps of a batch reported at least
// once and still remembered: how many times it was reported, and where its
// finding is in Detector.findings (KeepFindings only).
type reportState struct {
	revision int32
	index    int32
	id       uint64 // Finding.ID, from the first report
}

// verdictCode is a Verdict in one byte, for the batch's padding.
type verdictCode uint8

const verdictNone verdictCode = 0 // not reported yet

var verdictByCode = [...]Verdict{"", Duplicated, Deduplicated, Single, Unconfirmed, Rejected}

func codeOf(v Verdict) verdictCode {
	if i := slices.Index(verdictByCode[1:], v); i >= 0 {
		return verdictCode(i + 1)
	}
	return verdictNone
}

// touched is called in streaming mode after an attempt was added to the batch in
// slot, which now holds a finding not reported as it stands: it is
// reported at once when decided by an answer, else it waits for Settle.
func (d *Detector) touched(slot int32, b *batch) {
	if !d.reportable(b) {
		return // ScopeClient: not (yet) sent on a second connection
	}
	b.dirty = true
	if final(b.lastSent()) {
		d.emit(d.report(slot, b))
		return
	}
	d.settling.Push(queued{time: b.last, slot: slot, gen: b.gen})
}

// settled reports the findings whose batches were last touched more than
// Settle before the newest packet time. As with the window, a batch behind
// a newer one in the queue waits for it, never the reverse.
func (d *Detector) settled() {
	cutoff := d.newest - d.settle
	for {
		q, ok := d.settling.Front()
		if !ok {
			break
		}
		b := d.slab.at(q.slot)
		if !b.inUse || b.gen != q.gen || !b.dirty {
			d.settling.Pop() // stale: touched again, reported or forgotten
			continue
		}
		if q.time >= cutoff {
			return
		}
		d.settling.Pop()
		d.stats.Settled++
		d.emit(d.report(q.slot, b))
	}
}

// report decides the finding of the batch in slot as it stands and counts
// it: a first report as a new finding, a later one as a revision that moves
// the finding's verdict count.
func (d *Detector) report(slot int32, b *batch) Finding {
	f := d.finding(b)
	d.attachRecords(&f, slot)
	d.applyFetched(&f)
	base := f
	d.applyTxn(&f)
	rs := d.reports[slot]
	if rs.revision == 0 {
		rs.id = d.newFindingID()
	}
	f.Revision, f.ID = int(rs.revision), rs.id
	d.keepTxnPending(&base, &f, slot, b.gen, -1, 0)
	d.countReport(&f, b.reported)
	if d.opts.KeepFindings {
		if rs.revision == 0 {
			rs.index = int32(len(d.findings))
			d.findings = append(d.findings, f)
		} else {
			d.findings[rs.index] = f
		}
	}
	rs.revision++
	d.reports[slot] = rs
	b.reported = codeOf(f.Verdict)
	b.dirty = false
	return f
}

// newFindingID names a streamed finding at its first report.
func (d *Detector) newFindingID() uint64 {
	d.findingIDs++
	return d.findingIDs
}

func (d *Detector) emit(f Finding) {
	if d.opts.OnFinding != nil {
		d.opts.OnFinding(f)
	}
}

// flushStreaming is Flush with Options.Streaming.
func (d *Detector) flushStreaming() []Finding {
	for i := range d.slab.n {
		if d.slab.at(i).inUse {
			d.retire(i, false)
		}
	}
	d.flushRecords()
	slices.SortFunc(d.fresh, compareFindings)
	for _, f := range d.fresh {
		d.emit(f)
	}
	d.age.Reset()
	d.settling.Reset()
	clear(d.reports)
	d.resetProof()
	fresh := d.fresh
	d.fresh = nil
	if !d.opts.KeepFindings {
		return fresh
	}
	slices.SortStableFunc(d.findings, compareFindings)
	return slices.Clone(d.findings)
}

// lastSent is the attempt of b sent last, in the order findings give their
// attempts (compareAttempts).
func (b *batch) lastSent() *attempt {
	last := &b.first
	for i := range b.more {
		a := &b.more[i]
		if compareAttempts(a, last) > 0 {
			last = a
		}
	}
	return last
}

// final reports whether no retry can follow the answer to a: it was sent
// with acks=0, which is never answered nor retried, or answered for its
// partition with NONE, DUPLICATE_SEQUENCE_NUMBER (which clients take as
// success) or an error that is not retriable. No answer, an answer that
// does not name the partition, or a retriable error can be followed by a
// retry. kerr marks REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND
// retriable; they are named here so that this holds whatever kerr says.
func final(a *attempt) bool {
	if a.acks == 0 {
		return true
	}
	if !a.partResp {
		return false
	}
	switch a.errorCode {
	case 0, errDuplicateSequenceNumber:
		return true
	case errRequestTimedOut, errNotEnoughReplicasAfterAppend:
		return false
	}
	return !kerr.IsRetriable(kerr.ErrorForCode(a.errorCode))
}

// countReport counts a report of f: a new finding when reported is
// verdictNone, else a revision of one last reported with that verdict,
// whose count moves to f's.
func (d *Detector) countReport(f *Finding, reported verdictCode) {
	if reported == verdictNone {
		d.stats.Findings++
		d.topic(f.Topic, f.TopicID).Findings++
		d.moveVerdict(f, "")
		return
	}
	d.stats.Revisions++
	d.moveVerdict(f, verdictByCode[reported])
}

// moveVerdict moves f's count from the verdict old (none when "") to its
// own, overall and for its topic.
func (d *Detector) moveVerdict(f *Finding, old Verdict) {
	ts := d.topic(f.Topic, f.TopicID)
	if old != "" {
		if d.stats.ByVerdict[old]--; d.stats.ByVerdict[old] == 0 {
			delete(d.stats.ByVerdict, old)
		}
		if old == Duplicated {
			ts.Duplicated--
		}
	}
	d.stats.ByVerdict[f.Verdict]++
	if f.Verdict == Duplicated {
		ts.Duplicated++
	}
}
