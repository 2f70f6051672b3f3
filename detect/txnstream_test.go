package detect

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// TestTxnOutcomeStreamed: streamed, a finding is reported before its
// transaction ends (outcome unknown); the EndTxn or InitProducerId that
// ends it reports it again, a revision with the same ID, whose outcome and
// reason are those Flush gives without Streaming. One whose transaction
// never ends is reported once.
func TestTxnOutcomeStreamed(t *testing.T) {
	txn := "tx-1"
	init := &decode.InitProducerID{Conn: conn2, RequestTime: ms(-10), ResponseTime: ms(-9), TransactionalID: &txn,
		OldProducerID: -1, OldProducerEpoch: -1, ProducerID: 0, ProducerEpoch: 0}
	end := func(sentMs float64, commit bool) *decode.EndTxn {
		return &decode.EndTxn{Conn: conn2, RequestTime: ms(sentMs), TransactionalID: txn, ProducerID: 0, ProducerEpoch: 0,
			Commit: commit, Responded: true, ResponseTime: ms(sentMs + 1), BumpedEpoch: -1}
	}
	fence := *init
	fence.RequestTime, fence.ResponseTime, fence.ProducerEpoch = ms(70), ms(71), 1
	tests := []struct {
		name    string
		feed    func(d *Detector)
		reports int
		outcome TxnOutcome
	}{
		{"aborted", func(d *Detector) { d.EndTxn(end(50, false)) }, 2, TxnAborted},
		{"committed", func(d *Detector) { d.EndTxn(end(50, true)) }, 2, TxnCommitted},
		{"fenced", func(d *Detector) { d.InitProducerID(&fence) }, 2, TxnAborted},
		{"no end", func(*Detector) {}, 1, TxnUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := func(d *Detector) {
				d.InitProducerID(init)
				// A broker that did not deduplicate: two offsets, decided
				// at the second answer.
				d.Produce(ex(conn1, 1, 0, 10, 7, 3, idem(4, 70)))
				d.Produce(ex(conn1, 2, 20, 30, 0, 4, idem(4, 70)))
				tt.feed(d)
			}
			batch := New(Options{})
			feed(batch)
			want := batch.Flush()
			if len(want) != 1 || want[0].Transaction == nil || want[0].Transaction.Outcome != tt.outcome {
				t.Fatalf("without streaming: %+v", want)
			}
			var got []Finding
			d := New(Options{Streaming: true, OnFinding: func(f Finding) { got = append(got, f) }})
			feed(d)
			if kept, want := d.txn.pendingN, 2-tt.reports; kept != want {
				t.Errorf("%d findings kept waiting for their transaction's end, want %d", kept, want)
			}
			d.Flush()
			if len(got) != tt.reports {
				t.Fatalf("%d reports, want %d: %+v", len(got), tt.reports, got)
			}
			if got[0].Transaction == nil || got[0].Transaction.Outcome != TxnUnknown {
				t.Errorf("first report: transaction %+v, want outcome unknown (no EndTxn yet)", got[0].Transaction)
			}
			last := got[len(got)-1]
			if last.ID != got[0].ID || last.Revision != len(got)-1 {
				t.Errorf("last report: ID %d revision %d, want ID %d revision %d", last.ID, last.Revision, got[0].ID, len(got)-1)
			}
			if last.Transaction.Outcome != tt.outcome || last.Reason != want[0].Reason || last.Verdict != want[0].Verdict {
				t.Errorf("last report: %s %s %q\nwithout streaming: %s %s %q", last.Verdict, last.Transaction.Outcome, last.Reason,
					want[0].Verdict, want[0].Transaction.Outcome, want[0].Reason)
			}
			if s := d.Stats(); s.Findings != 1 || s.Revisions != int64(tt.reports-1) || s.ByVerdict[Duplicated] != 1 {
				t.Errorf("stats: %d findings, %d revisions, by verdict %v", s.Findings, s.Revisions, s.ByVerdict)
			}
		})
	}
}

// reviseByApply is what reviseTxn did before it decided by the outcome
// alone: applyTxn on a copy of every finding kept, kept again while its
// outcome is unknown and its window not past.
func reviseByApply(d *Detector, p *txnProducer) (kept []txnPending, due []Finding, pendingN int) {
	pendingN = d.txn.pendingN
	for _, e := range p.pending {
		f := e.f
		d.applyTxn(&f)
		if f.Transaction != nil && f.Transaction.Outcome == TxnUnknown && d.newest-e.at <= d.window {
			kept = append(kept, e)
			continue
		}
		pendingN--
		if f.Transaction == nil || f.Transaction.Outcome == TxnUnknown {
			continue
		}
		f.Revision = e.f.Revision + 1
		due = append(due, f)
	}
	return kept, due, pendingN
}

// TestReviseTxnByOutcome: reviseTxn, which builds a Transaction only for
// the findings it reports again, keeps, drops and reports the same
// findings as applying the whole transaction to each (reviseByApply), over
// random EndTxn and InitProducerId histories: answered or not, refused,
// committing or aborting, of several epochs, fences before and after.
func TestReviseTxnByOutcome(t *testing.T) {
	const window = 100 * time.Millisecond
	// state builds the same Detector and producer from seed each time.
	state := func(seed uint64, out *[]Finding) (*Detector, *txnProducer) {
		r := rand.New(rand.NewPCG(seed, 1))
		d := New(Options{Streaming: true, Window: window, OnFinding: func(f Finding) { *out = append(*out, f) }})
		d.newest = unixNano(ms(200))
		p := &txnProducer{txnID: "tx", epochs: []int16{0, 1}, inits: []WireExchange{{ConnID: 1}, {ConnID: 2}}}
		d.txn.byPID = map[int64]*txnProducer{7: p}
		for i := range r.IntN(4) {
			p.fences = append(p.fences, txnFence{time: unixNano(ms(float64(r.IntN(200)))), epoch: int16(r.IntN(3)),
				ref: WireExchange{ConnID: uint64(10 + i)}})
		}
		for i := range r.IntN(6) {
			p.ends = append(p.ends, txnEnd{time: unixNano(ms(float64(r.IntN(200)))), epoch: int16(r.IntN(3)),
				commit: r.IntN(2) == 0, responded: r.IntN(3) != 0, errorCode: int16(r.IntN(4) / 3 * 48),
				ref: WireExchange{ConnID: uint64(20 + i)}})
		}
		for i := range 1 + r.IntN(6) {
			f := Finding{ID: uint64(i + 1), ProducerID: 7, ProducerEpoch: int16(r.IntN(3)), Revision: r.IntN(3),
				Verdict: []Verdict{Duplicated, Deduplicated}[r.IntN(2)], Reason: "re-sent"}
			if r.IntN(8) != 0 {
				f.Attempts = []Attempt{{Time: ms(float64(r.IntN(200)))}}
			}
			p.pending = append(p.pending, txnPending{f: f, at: unixNano(ms(float64(r.IntN(200)))), slot: -1, dup: -1})
		}
		d.txn.pendingN = len(p.pending)
		return d, p
	}
	var decided, kept, dropped int
	for seed := range uint64(2000) {
		var ignored, got []Finding
		ref, rp := state(seed, &ignored)
		wantKept, want, wantN := reviseByApply(ref, rp)
		d, p := state(seed, &got)
		d.reviseTxn(p)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: reported %+v\nwant %+v", seed, got, want)
		}
		if len(p.pending) != len(wantKept) || (len(wantKept) > 0 && !reflect.DeepEqual(p.pending, wantKept)) || d.txn.pendingN != wantN {
			t.Fatalf("seed %d: kept %+v (%d), want %+v (%d)", seed, p.pending, d.txn.pendingN, wantKept, wantN)
		}
		decided += len(want)
		kept += len(wantKept)
		dropped += len(rp.pending) - len(wantKept) - len(want)
	}
	// Every way out taken, or the comparison proves little.
	if decided == 0 || kept == 0 || dropped == 0 {
		t.Errorf("%d findings reported again, %d kept, %d dropped: want some of each", decided, kept, dropped)
	}
	t.Logf("%d findings reported again, %d kept, %d dropped", decided, kept, dropped)
}
