package detect

import (
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
}

// applyTxn sets f.Transaction when f's producer ID is transactional, and
// says in the reason what its outcome means for consumers.
func (d *Detector) applyTxn(f *Finding) {
	p := d.txn.byPID[f.ProducerID]
	if f.ProducerID < 0 || p == nil || len(f.Attempts) == 0 {
		return
	}
	t := &Transaction{TransactionalID: p.txnID, ProducerID: f.ProducerID, ProducerEpoch: f.ProducerEpoch,
		Outcome: TxnUnknown, Epochs: append([]int16(nil), p.epochs...),
		Inits: append([]WireExchange(nil), p.inits...)}
	sent := unixNano(f.Attempts[0].Time)
	fenced := -1
	for i, fc := range p.fences {
		if fc.time > sent && fc.epoch != f.ProducerEpoch {
			fenced = i
			break
		}
	}
	var doubt []bool // commit flags of EndTxns whose answer is missing
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
			doubt = append(doubt, e.commit)
			continue
		}
		if e.errorCode != 0 {
			continue // not ended by this request
		}
		t.Outcome = TxnAborted
		if e.commit {
			t.Outcome = TxnCommitted
		}
		for _, c := range doubt {
			if c != e.commit {
				t.Outcome = TxnUnknown // the unanswered one may have ended it
			}
		}
		if t.Outcome != TxnUnknown {
			ref := e.ref
			t.End = &ref
		}
		break
	}
	byFence := fenced >= 0 && t.Outcome == TxnUnknown && len(doubt) == 0
	if byFence {
		t.Outcome = TxnAborted
		ref := p.fences[fenced].ref
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
