package detect

import (
	"slices"
	"strconv"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// Transactions: InitProducerId links a producer ID to its transactional.id
// and gives its epoch (a new epoch for the same transactional.id is a bump:
// a restarted or fenced producer); EndTxn commits or aborts the open
// transaction of a producer ID and epoch. A batch of a transactional
// producer belongs to the transaction its producer ID and epoch had open
// when it was sent, which the first EndTxn of that ID and epoch sent after
// it ends. Detector.InitProducerID and Detector.EndTxn satisfy
// decode.TxnSink.

// TxnOutcome is how a transaction ended.
type TxnOutcome string

const (
	TxnCommitted TxnOutcome = "committed"
	TxnAborted   TxnOutcome = "aborted"
	// TxnUnknown: no EndTxn answered NONE after the batch in the capture,
	// or one whose answer is missing might have ended it the other way.
	TxnUnknown TxnOutcome = "unknown"
)

// Transaction is the transaction a finding's batch belongs to.
type Transaction struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Outcome         TxnOutcome
	// Epochs are the epochs InitProducerId (and EndTxn v5+, which bumps
	// the epoch at every transaction end) gave this producer ID in the
	// capture, in order: more than one shows epoch bumps.
	Epochs []int16
	// End is the EndTxn exchange that decided Outcome; nil when unknown.
	End *WireExchange
	// Inits are the InitProducerId or EndTxn exchanges that gave Epochs.
	Inits []WireExchange
}

// Bounds of the transaction state.
const (
	maxTxnProducers = 1 << 16 // producer IDs linked to a transactional.id
	maxTxnEnds      = 4096    // EndTxn requests kept per producer ID
	maxTxnEpochs    = 64      // epochs kept per producer ID
)

type txnState struct {
	byPID map[int64]*txnProducer
	// pendingN counts the findings kept in the producers' pending.
	pendingN int
}

// txnProducer is one producer ID of a transactional.id.
type txnProducer struct {
	txnID  string
	epochs []int16
	inits  []WireExchange
	ends   []txnEnd // in the order completed
	// fences are the InitProducerId exchanges of this producer ID: one
	// after a batch, before any EndTxn of its epoch, aborted its
	// transaction (the coordinator aborts the open transaction of a
	// transactional.id that initialises again: a restarted producer).
	fences []txnFence
	// pending are the findings reported with this producer ID's
	// transaction outcome unknown (Streaming), to report again once it is
	// known.
	pending []txnPending
}

type txnFence struct {
	time  int64 // request time, Unix ns
	epoch int16 // the epoch it gave
	ref   WireExchange
}

type txnEnd struct {
	time      int64 // request time, Unix ns
	epoch     int16
	commit    bool
	responded bool
	errorCode int16
	ref       WireExchange
}

// producer returns the state of pid, linked to txnID, nil past the bound.
func (d *Detector) txnProducer(pid int64, txnID string) *txnProducer {
	if d.txn.byPID == nil {
		d.txn.byPID = make(map[int64]*txnProducer)
	}
	p := d.txn.byPID[pid]
	if p == nil {
		if len(d.txn.byPID) >= maxTxnProducers {
			return nil
		}
		p = &txnProducer{}
		d.txn.byPID[pid] = p
	}
	p.txnID = txnID
	return p
}

// InitProducerID takes one InitProducerId exchange; x is read during the
// call only.
func (d *Detector) InitProducerID(x *decode.InitProducerID) {
	if x == nil || x.TransactionalID == nil || x.ErrorCode != 0 || x.ProducerID < 0 {
		return
	}
	p := d.txnProducer(x.ProducerID, *x.TransactionalID)
	if p == nil {
		return
	}
	ref := wireOf(x.Conn, x.RequestTime, x.ResponseTime)
	p.epoch(x.ProducerEpoch, ref)
	if len(p.fences) < maxTxnEpochs {
		p.fences = append(p.fences, txnFence{unixNano(x.RequestTime), x.ProducerEpoch, ref})
	}
	d.reviseTxn(p)
}

// wireOf names an exchange on conn (nil: unknown) for --write-dups.
func wireOf(conn *decode.ConnInfo, req, resp time.Time) WireExchange {
	w := WireExchange{RequestTime: req, ResponseTime: resp}
	if conn != nil {
		w.ConnID, w.Client, w.Broker = conn.ID, conn.Client, conn.Broker
	}
	return w
}

// epoch records an epoch given to the producer, if new, and the exchange
// that gave it.
func (p *txnProducer) epoch(e int16, ref WireExchange) {
	if n := len(p.epochs); (n == 0 || p.epochs[n-1] != e) && n < maxTxnEpochs {
		p.epochs = append(p.epochs, e)
		p.inits = append(p.inits, ref)
	}
}

// EndTxn takes one EndTxn request and its answer, if any; x is read during
// the call only.
func (d *Detector) EndTxn(x *decode.EndTxn) {
	if x == nil || x.ProducerID < 0 {
		return
	}
	p := d.txnProducer(x.ProducerID, x.TransactionalID)
	if p == nil || len(p.ends) >= maxTxnEnds {
		return
	}
	e := txnEnd{time: unixNano(x.RequestTime), epoch: x.ProducerEpoch, commit: x.Commit,
		responded: x.Responded, errorCode: x.ErrorCode,
		ref: wireOf(x.Conn, x.RequestTime, x.ResponseTime)}
	p.ends = append(p.ends, e)
	if x.Responded && x.BumpedEpoch >= 0 {
		p.epoch(x.BumpedEpoch, e.ref)
	}
	d.reviseTxn(p)
}

// txnOf is the transactional producer of f's batch, nil when it has none
// (applyTxn then sets no Transaction).
func (d *Detector) txnOf(f *Finding) *txnProducer {
	if f.ProducerID < 0 || len(f.Attempts) == 0 {
		return nil
	}
	return d.txn.byPID[f.ProducerID]
}

// outcome is how p's transaction that f's batch belongs to ended, as far
// as the EndTxn and InitProducerId exchanges seen show: with the index in
// p.ends of the EndTxn that decided it, or in p.fences of the
// InitProducerId that aborted it (-1 when not that one).
func (p *txnProducer) outcome(f *Finding) (out TxnOutcome, end, fence int) {
	out, end = TxnUnknown, -1
	sent := unixNano(f.Attempts[0].Time)
	fenced := -1
	for i, fc := range p.fences {
		if fc.time > sent && fc.epoch != f.ProducerEpoch {
			fenced = i
			break
		}
	}
	// An EndTxn whose answer is missing asked to commit, or to abort.
	var doubtCommit, doubtAbort bool
	for i := range p.ends {
		e := &p.ends[i]
		if e.epoch != f.ProducerEpoch || e.time < sent {
			continue
		}
		if fenced >= 0 && p.fences[fenced].time < e.time {
			break // the fence came first
		}
		fenced = -1
		if !e.responded {
			doubtCommit = doubtCommit || e.commit
			doubtAbort = doubtAbort || !e.commit
			continue
		}
		if e.errorCode != 0 {
			continue // not ended by this request
		}
		out = TxnAborted
		if e.commit {
			out = TxnCommitted
		}
		if e.commit && doubtAbort || !e.commit && doubtCommit {
			out = TxnUnknown // the unanswered one may have ended it
		}
		if out != TxnUnknown {
			end = i
		}
		break
	}
	if fenced >= 0 && out == TxnUnknown && !doubtCommit && !doubtAbort {
		return TxnAborted, -1, fenced
	}
	return out, end, -1
}

// applyTxn sets f.Transaction when f's producer ID is transactional, and
// says in the reason what its outcome means for consumers.
func (d *Detector) applyTxn(f *Finding) {
	p := d.txnOf(f)
	if p == nil {
		return
	}
	out, end, fenced := p.outcome(f)
	t := &Transaction{TransactionalID: p.txnID, ProducerID: f.ProducerID, ProducerEpoch: f.ProducerEpoch,
		Outcome: out, Epochs: append([]int16(nil), p.epochs...),
		Inits: append([]WireExchange(nil), p.inits...)}
	byFence := fenced >= 0
	switch {
	case byFence:
		ref := p.fences[fenced].ref
		t.End = &ref
	case end >= 0:
		ref := p.ends[end].ref
		t.End = &ref
	}
	f.Transaction = t
	name := "its transaction (transactional.id " + strconv.Quote(t.TransactionalID) + ", producer ID " +
		strconv.FormatInt(t.ProducerID, 10) + ", epoch " + strconv.Itoa(int(t.ProducerEpoch)) + ")"
	switch t.Outcome {
	case TxnAborted:
		f.Reason += "; " + name + " was aborted"
		if byFence {
			f.Reason += " (InitProducerId gave the producer epoch " + strconv.Itoa(int(p.fences[fenced].epoch)) +
				" before any EndTxn ended it: the coordinator aborts the open transaction)"
		}
		f.Reason += ": read_committed consumers see no copy of the batch"
		if f.Verdict == Duplicated {
			f.Reason += ", so the duplicate is invisible to them (read_uncommitted consumers see it)"
		}
	case TxnCommitted:
		f.Reason += "; " + name + " was committed: read_committed consumers see "
		if f.Verdict == Duplicated {
			f.Reason += "every copy"
		} else {
			f.Reason += "it"
		}
	default:
		f.Reason += "; the capture does not show whether " + name + " was committed or aborted"
	}
}

// Streaming (Options.Streaming) reports a finding as soon as it is
// decided, which for a transactional producer is mostly before the EndTxn
// that ends its transaction: the report says the outcome is unknown. Such
// a finding is kept, as it was before its transaction was applied, under
// its producer ID (txnProducer.pending), and reported again, as a
// revision, once an EndTxn or an InitProducerId of that producer ID
// decides the outcome, so that the latest report of every finding says
// what analyze says of it with all the capture at hand. Kept at most
// maxTxnPending findings in all and maxTxnPendingPer a producer ID (the
// oldest goes first), each for Window of packet time at most.
const (
	maxTxnPending    = 4096
	maxTxnPendingPer = 256
)

// txnPending is a finding reported with its transaction's outcome
// unknown: f as before applyTxn, with the Revision and ID of that report;
// at is the packet time it was reported. slot and gen name its batch
// (batch findings), dup and dgen the first duplicate of its group (record
// findings; slot -1), whose revision a later report continues.
type txnPending struct {
	f    Finding
	at   int64
	slot int32
	gen  uint32
	dup  int32
	dgen uint32
}

// keepTxnPending files base (a report before applyTxn) when f, the same
// report after it, left the outcome unknown; in any case it drops an
// earlier report of the same finding kept before.
func (d *Detector) keepTxnPending(base, f *Finding, slot int32, gen uint32, dup int32, dgen uint32) {
	if !d.opts.Streaming || f.ProducerID < 0 {
		return
	}
	p := d.txn.byPID[f.ProducerID]
	if p == nil {
		return
	}
	kept := p.pending[:0]
	for _, e := range p.pending {
		if e.f.ID == f.ID || d.newest-e.at > d.window {
			d.txn.pendingN--
			continue
		}
		kept = append(kept, e)
	}
	clear(p.pending[len(kept):])
	p.pending = kept
	if f.Transaction == nil || f.Transaction.Outcome != TxnUnknown || d.txn.pendingN >= maxTxnPending {
		return
	}
	if len(p.pending) >= maxTxnPendingPer {
		p.pending = append(p.pending[:0], p.pending[1:]...)
		d.txn.pendingN--
	}
	b := *base
	b.Revision, b.ID = f.Revision, f.ID
	b.Attempts = slices.Clone(b.Attempts) // the caller may set their hosts
	p.pending = append(p.pending, txnPending{f: b, at: d.newest, slot: slot, gen: gen, dup: dup, dgen: dgen})
	d.txn.pendingN++
}

// reviseTxn reports again, as revisions, the findings of p kept with an
// unknown outcome that an EndTxn or InitProducerId just decided.
func (d *Detector) reviseTxn(p *txnProducer) {
	if len(p.pending) == 0 {
		return
	}
	kept := p.pending[:0]
	var due []Finding
	for i := range p.pending {
		// Only the outcome decides whether a finding is kept: the
		// Transaction and reason are built for those reported again.
		e := &p.pending[i]
		tp := d.txnOf(&e.f)
		out := TxnUnknown
		if tp != nil {
			out, _, _ = tp.outcome(&e.f)
		}
		if tp != nil && out == TxnUnknown && d.newest-e.at <= d.window {
			kept = append(kept, *e)
			continue
		}
		d.txn.pendingN--
		if out == TxnUnknown {
			continue // too old
		}
		f := e.f
		d.applyTxn(&f)
		f.Revision = e.f.Revision + 1
		d.continueRevision(e, &f)
		due = append(due, f)
	}
	clear(p.pending[len(kept):])
	p.pending = kept
	for _, f := range due {
		d.stats.Revisions++
		d.emit(f)
	}
}

// continueRevision makes the next report of e's finding, if its batch or
// duplicate is still remembered, come after f's revision; with
// KeepFindings, f replaces the finding kept.
func (d *Detector) continueRevision(e *txnPending, f *Finding) {
	switch {
	case e.slot >= 0:
		if rs, ok := d.reports[e.slot]; ok && rs.id == f.ID && d.slab.at(e.slot).gen == e.gen {
			rs.revision = int32(f.Revision) + 1
			d.reports[e.slot] = rs
			if d.opts.KeepFindings {
				d.findings[rs.index] = *f
			}
			return
		}
	case d.recs != nil && int(e.dup) < len(d.recs.dups):
		if dp := &d.recs.dups[e.dup]; dp.gen == e.dgen && dp.id == f.ID {
			dp.revision = max(dp.revision, int32(f.Revision)+1)
		}
	}
	if d.opts.KeepFindings {
		for i := len(d.findings) - 1; i >= 0; i-- {
			if d.findings[i].ID == f.ID {
				d.findings[i] = *f
				break
			}
		}
	}
}
