package detect

import (
	"testing"

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
