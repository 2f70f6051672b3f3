package detect

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

var consumer = &decode.ConnInfo{ID: 9, Client: conn1.Client, Broker: conn1.Broker, DetectedBy: "port", FirstSeen: t0}

// fetched is a FetchResponse answered at respMs holding batches bs at their
// offsets on topic "test" partition 0, with high watermark hwm.
func fetched(respMs float64, hwm int64, bs ...decode.FetchedBatch) *decode.Fetch {
	return &decode.Fetch{Conn: consumer, ReplicaID: -1, RequestTime: ms(respMs - 1), ResponseTime: ms(respMs),
		Partitions: []decode.FetchedPartition{{Topic: "test", HighWatermark: hwm, LastStableOffset: hwm, LogStartOffset: 0, Batches: bs}}}
}

func at(b decode.Batch, off int64) decode.FetchedBatch {
	return decode.FetchedBatch{BaseOffset: off, Batch: b}
}

// filler is another batch of 10 records, fetched around the finding's.
func filler(off int64) decode.FetchedBatch { return at(plain(0xf111), off) }

func TestFetchProof(t *testing.T) {
	tests := []struct {
		name    string
		window  time.Duration
		feed    func(d *Detector)
		verdict Verdict
		proof   Proof
		fetched []int64
		reason  string
	}{
		{
			name: "fetched twice decides an unanswered resend",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn1, 2, 100, noAnswer, 0, 0, plain(7)))
				d.Fetch(fetched(500, 30, at(plain(7), 0), filler(10), at(plain(7), 20)))
			},
			verdict: Duplicated, proof: ProofFetch, fetched: []int64{0, 20},
			reason: "fetched data holds the batch at offsets 0 and 20: the log holds the batch twice",
		},
		{
			name: "fetched once up to the high watermark decides single",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn1, 2, 100, noAnswer, 0, 0, plain(7)))
				d.Fetch(fetched(500, 20, filler(0), at(plain(7), 10)))
			},
			verdict: Single, proof: ProofFetch, fetched: []int64{10},
			reason: "and nowhere else up to the high watermark 20",
		},
		{
			name:   "a fetch long after the window still counts",
			window: time.Second,
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn1, 2, 100, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn2, 1, 60_000, 60_001, 0, 40, plain(8))) // the window passes
				d.Fetch(fetched(90_000, 50, at(plain(7), 0), filler(10), at(plain(7), 20)))
			},
			verdict: Duplicated, proof: ProofFetch, fetched: []int64{0, 20},
		},
		{
			name: "fetched once before the resend decides nothing",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Fetch(fetched(50, 20, filler(0), at(plain(7), 10)))
				d.Produce(ex(conn1, 2, 100, noAnswer, 0, 0, plain(7)))
			},
			verdict: Unconfirmed, proof: ProofProduce, fetched: []int64{10},
			reason: "did not read on to where a second copy would be",
		},
		{
			name: "a hole in the fetched offsets decides nothing",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn1, 2, 100, noAnswer, 0, 0, plain(7)))
				d.Fetch(fetched(500, 30, at(plain(7), 10)))
				d.Fetch(fetched(600, 30, filler(21)))
			},
			verdict: Unconfirmed, proof: ProofProduce, fetched: []int64{10},
		},
		{
			name: "responses and fetches agree",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(7)))
				d.Fetch(fetched(15, 15, at(plain(7), 5))) // a tailing consumer
				d.Produce(ex(conn1, 2, 20, 30, 0, 15, plain(7)))
				d.Fetch(fetched(40, 25, at(plain(7), 15)))
			},
			verdict: Duplicated, proof: ProofBoth, fetched: []int64{5, 15},
		},
		{
			name: "fetched data shows a third copy",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(7)))
				d.Produce(ex(conn1, 2, 20, 30, 0, 15, plain(7)))
				d.Fetch(fetched(40, 35, at(plain(7), 5), at(plain(7), 25)))
			},
			verdict: Duplicated, proof: ProofBoth, fetched: []int64{5, 25},
			reason: "fetched data holds the batch at offsets 5 and 25: the log holds the batch 3 times",
		},
		{
			name: "one offset in a response, another in fetched data",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn1, 2, 20, 30, 0, 15, plain(7)))
				d.Fetch(fetched(40, 25, at(plain(7), 5)))
			},
			verdict: Duplicated, proof: ProofBoth, fetched: []int64{5},
		},
		{
			name: "another partition's batch is not this one",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, noAnswer, 0, 0, plain(7)))
				d.Produce(ex(conn1, 2, 100, noAnswer, 0, 0, plain(7)))
				f := fetched(500, 30, at(plain(7), 0), at(plain(7), 20))
				f.Partitions[0].Partition = 1
				d.Fetch(f)
			},
			verdict: Unconfirmed, proof: ProofProduce,
		},
		{
			name: "idempotent: matched by sequence whatever the CRC",
			feed: func(d *Detector) {
				d.Produce(ex(conn1, 1, 0, 10, 7, 3, idem(4, 70)))
				d.Produce(ex(conn1, 2, 20, 30, 0, 3, idem(4, 70)))
				d.Fetch(fetched(40, 4, at(idem(4, 71), 3)))
			},
			verdict: Deduplicated, proof: ProofBoth, fetched: []int64{3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{Window: tt.window})
			tt.feed(d)
			fs := d.Flush()
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1", len(fs))
			}
			f := fs[0]
			if f.Verdict != tt.verdict || f.Proof != tt.proof || !slices.Equal(f.FetchedOffsets, tt.fetched) {
				t.Errorf("%s by %s, fetched at %v; want %s by %s at %v: %s", f.Verdict, f.Proof, f.FetchedOffsets,
					tt.verdict, tt.proof, tt.fetched, f.Reason)
			}
			if !strings.Contains(f.Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", f.Reason, tt.reason)
			}
			if n := d.Stats().ByVerdict[tt.verdict]; n != 1 {
				t.Errorf("stats count %d %s findings, want 1", n, tt.verdict)
			}
			if len(f.Fetches) != len(f.FetchedOffsets) {
				t.Errorf("%d fetch exchanges for %d offsets", len(f.Fetches), len(f.FetchedOffsets))
			}
		})
	}
}

func TestTxnOutcome(t *testing.T) {
	txn := "tx-1"
	init := &decode.InitProducerID{Conn: conn2, RequestTime: ms(-10), ResponseTime: ms(-9), TransactionalID: &txn,
		OldProducerID: -1, OldProducerEpoch: -1, ProducerID: 0, ProducerEpoch: 0}
	end := func(sentMs float64, commit, responded bool, code int16) *decode.EndTxn {
		return &decode.EndTxn{Conn: conn2, RequestTime: ms(sentMs), TransactionalID: txn, ProducerID: 0, ProducerEpoch: 0,
			Commit: commit, Responded: responded, ResponseTime: ms(sentMs + 1), ErrorCode: code, BumpedEpoch: -1}
	}
	refence := *init
	refence.RequestTime, refence.ResponseTime, refence.ProducerEpoch = ms(70), ms(71), 1
	tests := []struct {
		name    string
		ends    []*decode.EndTxn
		fence   bool // InitProducerId again at 70 ms
		outcome TxnOutcome
		reason  string
	}{
		{"fenced", nil, true, TxnAborted, "before any EndTxn ended it"},
		{"ended before the fence", []*decode.EndTxn{end(50, true, true, 0)}, true, TxnCommitted, "was committed"},
		{"aborted", []*decode.EndTxn{end(-5, true, true, 0), end(50, false, true, 0)}, false, TxnAborted,
			"was aborted: read_committed consumers see no copy of the batch, so the duplicate is invisible to them"},
		{"committed", []*decode.EndTxn{end(50, true, true, 0), end(80, false, true, 0)}, false, TxnCommitted,
			"was committed: read_committed consumers see every copy"},
		{"failed commit then abort", []*decode.EndTxn{end(50, true, true, 51), end(60, false, true, 0)}, false, TxnAborted, "was aborted"},
		{"unanswered commit then abort", []*decode.EndTxn{end(50, true, false, 0), end(60, false, true, 0)}, false, TxnUnknown,
			"does not show whether"},
		{"no end", nil, false, TxnUnknown, "does not show whether"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{})
			d.InitProducerID(init)
			// A broker that did not deduplicate: two offsets.
			d.Produce(ex(conn1, 1, 0, 10, 7, 3, idem(4, 70)))
			d.Produce(ex(conn1, 2, 20, 30, 0, 4, idem(4, 70)))
			for _, e := range tt.ends {
				d.EndTxn(e)
			}
			if tt.fence {
				d.InitProducerID(&refence)
			}
			fs := d.Flush()
			if len(fs) != 1 || fs[0].Transaction == nil {
				t.Fatalf("findings %+v, want one with a transaction", fs)
			}
			tx := fs[0].Transaction
			if tx.Outcome != tt.outcome || tx.TransactionalID != txn || tx.Epochs[0] != 0 {
				t.Errorf("transaction %+v, want %s of %s", *tx, tt.outcome, txn)
			}
			if (tx.End != nil) != (tt.outcome != TxnUnknown) {
				t.Errorf("End %v with outcome %s", tx.End, tx.Outcome)
			}
			if !strings.Contains(fs[0].Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", fs[0].Reason, tt.reason)
			}
		})
	}
}

func TestCoverAdd(t *testing.T) {
	var c cover
	for _, r := range [][2]int64{{10, 20}, {30, 40}, {20, 25}, {0, 5}, {25, 30}, {4, 10}} {
		c.add(r[0], r[1])
	}
	if want := [][2]int64{{0, 40}}; !slices.Equal(c.ranges, want) {
		t.Errorf("ranges %v, want %v", c.ranges, want)
	}
	for i := range 2 * maxCoverRanges {
		c.add(int64(100+10*i), int64(105+10*i))
	}
	if len(c.ranges) != maxCoverRanges {
		t.Errorf("%d ranges kept, want the bound %d", len(c.ranges), maxCoverRanges)
	}
}
