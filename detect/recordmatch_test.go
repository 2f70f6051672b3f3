package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/fleet"
)

// TestHotBudgetIsFleets: a fleet's hosts print as many batches after a
// failure as record matching matches here (fleet/hot.go); the two
// constants are one, kept apart only by the import rules (detect importing
// fleet would bring kgo into report).
func TestHotBudgetIsFleets(t *testing.T) {
	if hotBudget != fleet.HotBudget {
		t.Errorf("detect's hotBudget %d, fleet.HotBudget %d: one budget", hotBudget, fleet.HotBudget)
	}
}

// recs is a non-idempotent batch holding the records named by content
// hashes, at offset deltas 0..n-1; crc tells its bytes apart.
func recs(crc uint32, hashes ...uint64) decode.Batch {
	b := plain(crc)
	b.NumRecords = int32(len(hashes))
	b.LastOffsetDelta = b.NumRecords - 1
	p := make([]decode.RecordPrint, len(hashes))
	for i, h := range hashes {
		p[i] = decode.RecordPrint{Hash: h, OffsetDelta: int32(i), Index: int32(i)}
	}
	b.SetRecordPrints(p)
	return b
}

// idemRecs is recs of an idempotent producer: producer ID pid, epoch,
// first sequence seq.
func idemRecs(pid int64, epoch int16, seq int32, crc uint32, hashes ...uint64) decode.Batch {
	b := recs(crc, hashes...)
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = pid, epoch, seq
	return b
}

// withClient is x sent with another client.id.
func withClient(x *decode.Exchange, id string) *decode.Exchange { x.ClientID = &id; return x }

// copyOffsets is every record's copies' offsets, in record order.
func copyOffsets(f Finding) [][]int64 {
	var out [][]int64
	for _, r := range f.Records {
		var offs []int64
		for _, c := range r.Copies {
			offs = append(offs, c.Offset)
		}
		out = append(out, offs)
	}
	return out
}

func TestRecordMatching(t *testing.T) {
	tests := []struct {
		name      string
		all       bool // Options.AllRecords
		exchanges []*decode.Exchange
		want      []Finding // Kind, Verdict, BatchRelation, NumRecords, RecordsOmitted
		offsets   [][][]int64
	}{
		{
			// segmentio/kafka-go: the same records re-encoded (new
			// timestamps, new CRC) after REQUEST_TIMED_OUT.
			name: "rebuilt after a broker error",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 0, 0, recs(0xa, 1, 2, 3)),
				ex(conn1, 2, 20, 520, 7, 3, recs(0xb, 4, 5, 6)),
				ex(conn1, 3, 600, 610, 0, 6, recs(0xc, 4, 5, 6)),
			},
			want:    []Finding{{Kind: KindRecordResend, Verdict: Duplicated, BatchRelation: RelationRebuilt, NumRecords: 3}},
			offsets: [][][]int64{{{3, 6}, {4, 7}, {5, 8}}},
		},
		{
			// sarama: the retried record first in a new batch with newer
			// ones; its first attempt was rejected before the append.
			name: "re-batched after a rejection",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 6, -1, recs(0xa, 1)),
				ex(conn1, 2, 100, 110, 0, 0, recs(0xb, 1, 2, 3)),
			},
			want:    []Finding{{Kind: KindRecordResend, Verdict: Single, BatchRelation: RelationRebatched, NumRecords: 1}},
			offsets: [][][]int64{{{-1, 0}}},
		},
		{
			// Unanswered, then re-sent rebuilt on a new connection.
			name: "rebuilt after the connection closed",
			exchanges: []*decode.Exchange{
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, recs(0xa, 1, 2)), decode.NoResponseClosed),
				ex(conn2, 1, 100, 110, 0, 5, recs(0xb, 1, 2)),
			},
			want:    []Finding{{Kind: KindRecordResend, Verdict: Unconfirmed, BatchRelation: RelationRebuilt, NumRecords: 2, Scope: ScopeClient}},
			offsets: [][][]int64{{{-1, 5}, {-1, 6}}},
		},
		{
			// Both answered with success: only AllRecords looks.
			name: "application duplicate, not looked for",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 0, 0, recs(0xa, 1)),
				ex(conn1, 2, 100, 110, 0, 1, recs(0xb, 1)),
			},
		},
		{
			name: "application duplicate",
			all:  true,
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 0, 0, recs(0xa, 1, 9)),
				ex(conn1, 2, 100, 110, 0, 2, recs(0xb, 1)),
			},
			want:    []Finding{{Kind: KindRecordDuplicate, Verdict: Duplicated, BatchRelation: RelationRebatched, NumRecords: 1}},
			offsets: [][][]int64{{{0, 2}}},
		},
		{
			// The same bytes again: the batch finding says it all.
			name: "same bytes is a batch finding only",
			all:  true,
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1, 2)),
				ex(conn1, 2, 600, 610, 0, 2, recs(0xa, 1, 2)),
			},
			want: []Finding{{Kind: KindBatch, Verdict: Duplicated}},
		},
		{
			// Records of one content repeated in their batch (empty
			// records, a constant value) tell nothing: two unanswered
			// batches of them are no re-send (issue 13: 40 batches of
			// 4-byte records made a false record_resend).
			name: "records repeated in their own batch",
			all:  true,
			exchanges: []*decode.Exchange{
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, recs(0xa, 7, 7, 7, 7)), decode.NoResponseEndOfCapture),
				noResp(ex(conn1, 2, 100, noAnswer, 0, 0, recs(0xb, 7, 7, 7)), decode.NoResponseEndOfCapture),
				ex(conn1, 3, 200, 210, 0, 0, recs(0xc, 7, 7)),
			},
		},
		{
			// The distinctive records of a rebuilt retry are still matched
			// beside repeated ones (which leave the batches unalike).
			name: "rebuilt with repeated records beside",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 7, 7, 1, 2)),
				ex(conn1, 2, 600, 610, 0, 4, recs(0xb, 7, 7, 1, 2)),
			},
			want:    []Finding{{Kind: KindRecordResend, Verdict: Duplicated, BatchRelation: RelationRebatched, NumRecords: 2}},
			offsets: [][][]int64{{{2, 6}, {3, 7}}},
		},
		{
			// librdkafka under leader moves: record 1 appended (answered
			// REQUEST_TIMED_OUT at 98), re-batched with newer ones into a
			// batch the old leader refused, that batch sent again as the
			// same bytes to the new leader and appended at 100: the
			// record is held twice, found by its records, not as two
			// single findings.
			name: "re-batched retry refused, then the same bytes appended",
			exchanges: []*decode.Exchange{
				inCluster(ex(conn1, 15, 0, 300, 7, 98, recs(0xa, 1)), "k"),
				inCluster(ex(conn1, 17, 400, 401, 6, -1, recs(0xb, 1, 2, 3)), "k"),
				inCluster(ex(conn3, 11, 500, 501, 0, 100, recs(0xb, 1, 2, 3)), "k"),
			},
			want: []Finding{
				{Kind: KindRecordResend, Verdict: Duplicated, BatchRelation: RelationRebatched, NumRecords: 1, Scope: ScopeClient},
				{Kind: KindBatch, Verdict: Single},
			},
			offsets: [][][]int64{{{98, -1, 100}}, nil},
		},
		{
			// Another partition is another record.
			name: "other partition",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1)),
				ex(conn1, 2, 600, 610, 0, 0, part(recs(0xb, 1), 1)),
			},
		},
		{
			// librdkafka 2.x: a request times out (no answer), the
			// producer bumps its epoch and sends the records again from
			// sequence 0, beside newer ones; the first was appended
			// (answered late, REQUEST_TIMED_OUT at its offset).
			name: "idempotent epoch bump",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 5100, 7, 10, idemRecs(5, 0, 40, 0xa, 1, 2, 3)),
				ex(conn1, 2, 5200, 5210, 0, 13, idemRecs(5, 1, 0, 0xb, 1, 2, 3, 4)),
			},
			want: []Finding{{Kind: KindRecordResend, Verdict: Duplicated, BatchRelation: RelationRebatched, NumRecords: 3,
				ProducerChange: ProducerChangeEpoch}},
			offsets: [][][]int64{{{10, 13}, {11, 14}, {12, 15}}},
		},
		{
			// The bump came before the failed attempt's exchange was
			// complete (its connection closed later): the new epoch's
			// batch is printed all the same.
			name: "idempotent epoch bump before the failure is handed over",
			exchanges: []*decode.Exchange{
				ex(conn2, 1, 0, 10, 0, 0, idemRecs(5, 0, 39, 0x9, 9)),
				ex(conn2, 2, 5200, 5210, 0, 13, idemRecs(5, 1, 0, 0xb, 1, 2)),
				noResp(ex(conn1, 1, 100, noAnswer, 0, 0, idemRecs(5, 0, 40, 0xa, 1, 2)), decode.NoResponseClosed),
			},
			want: []Finding{{Kind: KindRecordResend, Verdict: Unconfirmed, BatchRelation: RelationRebuilt, NumRecords: 2,
				ProducerChange: ProducerChangeEpoch, Scope: ScopeClient}},
			offsets: [][][]int64{{{-1, 13}, {-1, 14}}},
		},
		{
			// A new producer ID from the same client (InitProducerId
			// again) re-sending records the log holds.
			name: "idempotent new producer ID",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, idemRecs(5, 0, 0, 0xa, 1, 2)),
				ex(conn2, 1, 600, 610, 0, 2, idemRecs(6, 0, 0, 0xb, 1, 2)),
			},
			want: []Finding{{Kind: KindRecordResend, Verdict: Duplicated, BatchRelation: RelationRebuilt, NumRecords: 2,
				ProducerChange: ProducerChangeID, Scope: ScopeClient}},
			offsets: [][][]int64{{{0, 2}, {1, 3}}},
		},
		{
			// An idempotent retry at its sequence, its bytes rebuilt: the
			// broker deduplicates it, and the batch finding (by sequence)
			// says so; no record finding claims a duplicate.
			name: "idempotent retry at the same sequence",
			all:  true,
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, idemRecs(5, 0, 0, 0xa, 1, 2)),
				ex(conn1, 2, 600, 610, 0, 0, idemRecs(5, 0, 0, 0xb, 1, 2)),
			},
			want: []Finding{{Kind: KindBatch, Verdict: Deduplicated}},
		},
		{
			// Another client (client.id) with the same records after a
			// failure is another producer: no finding.
			name: "idempotent, another client",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, idemRecs(5, 0, 0, 0xa, 1, 2)),
				withClient(ex(conn1, 2, 600, 610, 0, 2, idemRecs(6, 0, 0, 0xb, 1, 2)), "other"),
			},
		},
		{
			// An epoch bump with no failure and no record in common
			// (a restart of the producer): nothing to find.
			name: "idempotent epoch bump, new records only",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 0, 0, idemRecs(5, 0, 0, 0xa, 1, 2)),
				ex(conn1, 2, 600, 610, 0, 2, idemRecs(5, 1, 0, 0xb, 3, 4)),
			},
		},
		{
			// Far past the failure's window, a batch is not matched.
			name: "after the window",
			exchanges: []*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1)),
				ex(conn1, 2, 11*60*1000, 11*60*1000+10, 0, 1, recs(0xb, 1)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{AllRecords: tt.all})
			for _, x := range tt.exchanges {
				d.Produce(x)
			}
			got := d.Flush()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d findings, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Kind != w.Kind || g.Verdict != w.Verdict || g.BatchRelation != w.BatchRelation {
					t.Errorf("finding %d: kind %s verdict %s relation %q, want %s %s %q (%s)", i, g.Kind, g.Verdict, g.BatchRelation,
						w.Kind, w.Verdict, w.BatchRelation, g.Reason)
				}
				if w.Kind == KindBatch {
					continue
				}
				if g.NumRecords != w.NumRecords || g.Match != MatchRecords {
					t.Errorf("finding %d: %d records matched by %s, want %d by records", i, g.NumRecords, g.Match, w.NumRecords)
				}
				if g.ProducerChange != w.ProducerChange {
					t.Errorf("finding %d: producer change %q, want %q (%s)", i, g.ProducerChange, w.ProducerChange, g.Reason)
				}
				if w.Scope != "" && g.Scope != w.Scope {
					t.Errorf("finding %d: scope %s, want %s", i, g.Scope, w.Scope)
				}
				if o := copyOffsets(g); !slices.EqualFunc(o, tt.offsets[i], slices.Equal) {
					t.Errorf("finding %d: copies at %v, want %v", i, o, tt.offsets[i])
				}
				for _, a := range g.Attempts {
					if a.Batch == nil {
						t.Errorf("finding %d: attempt %d has no batch", i, a.CorrelationID)
					}
				}
			}
			s := d.Stats()
			if s.RecordFindings != int64(len(tt.want))-int64(countKind(tt.want, KindBatch)) {
				t.Errorf("RecordFindings %d", s.RecordFindings)
			}
		})
	}
}

func countKind(fs []Finding, k Kind) int {
	n := 0
	for _, f := range fs {
		if f.Kind == k {
			n++
		}
	}
	return n
}

// TestRecordMatchingBounded: the prints remembered stay under MaxRecords,
// and a finding lists at most MaxFindingRecords records.
func TestRecordMatchingBounded(t *testing.T) {
	d := New(Options{AllRecords: true, MaxRecords: 1000})
	var hashes []uint64
	for i := range 3 * MaxFindingRecords {
		hashes = append(hashes, uint64(i)+1)
	}
	d.Produce(ex(conn1, 1, 0, 520, 7, 0, recs(0xa, hashes...)))
	d.Produce(ex(conn1, 2, 600, 610, 0, 300, recs(0xb, hashes...)))
	for i := range 5000 {
		d.Produce(ex(conn1, int32(3+i), float64(700+i), float64(701+i), 0, int64(600+i), recs(uint32(0x100+i), uint64(1_000_000+i))))
		if n := len(d.recs.entries); n > 1000 {
			t.Fatalf("%d prints remembered, MaxRecords 1000", n)
		}
	}
	got := d.Flush()
	if len(got) != 1 {
		t.Fatalf("got %d findings", len(got))
	}
	f := got[0]
	if len(f.Records) != MaxFindingRecords || f.RecordsOmitted != 2*MaxFindingRecords || f.NumRecords != 3*MaxFindingRecords {
		t.Errorf("records %d, omitted %d, count %d", len(f.Records), f.RecordsOmitted, f.NumRecords)
	}
	if s := d.Stats(); s.RecordsEvicted == 0 {
		t.Error("no print evicted")
	}
	if len(d.recs.entries) != 0 || len(d.recs.freeC) != int(d.recs.carriers.n) {
		t.Errorf("after Flush: %d prints, %d of %d carriers free", len(d.recs.entries), len(d.recs.freeC), d.recs.carriers.n)
	}
}

// TestRecordMatchingStreaming: a record-level finding is reported once Settle
// passed after its last copy, and again, revised, when another copy comes.
func TestRecordMatchingStreaming(t *testing.T) {
	var reported []Finding
	d := New(Options{Streaming: true, Settle: time.Second, OnFinding: func(f Finding) { reported = append(reported, f) }})
	d.Produce(ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1)))
	d.Produce(ex(conn1, 2, 600, 1120, 7, 1, recs(0xb, 1)))
	d.Advance(ms(3000))
	if len(reported) != 1 || reported[0].Revision != 0 || len(reported[0].Attempts) != 2 {
		t.Fatalf("after settle: %+v", reported)
	}
	d.Produce(ex(conn1, 3, 3200, 3210, 0, 2, recs(0xc, 1)))
	d.Flush()
	if len(reported) != 2 || reported[1].Revision != 1 || len(reported[1].Attempts) != 3 || reported[1].Verdict != Duplicated {
		t.Fatalf("after the third copy: %+v", reported)
	}
	if s := d.Stats(); s.RecordFindings != 1 || s.Revisions != 1 || s.ByVerdict[Duplicated] != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestHotPartitionCools: a failed batch makes its partition's next batches
// matched record by record; once it comes again as the same bytes and is
// answered (librdkafka, kgo), they need not be for it, while another
// failure still pending, or a retry that fails again, keeps them matched.
func TestHotPartitionCools(t *testing.T) {
	later := func(corr int32, at float64) []*decode.Exchange {
		var xs []*decode.Exchange
		for i := range int32(3) {
			xs = append(xs, ex(conn1, corr+i, at+float64(10*i), at+float64(10*i)+1, 0, int64(100+i), recs(uint32(0x100+i), uint64(100+i))))
		}
		return xs
	}
	// Failure F1 (batch 0xa), six batches, failure F2 (0xb), 0xa again as
	// the same bytes, two batches, then F2's record rebuilt: three batches
	// after F2, within its own budget, which F1's retry must not take.
	var robbed []*decode.Exchange
	corr, at := int32(1), 0.0
	next := func(code int16, b decode.Batch) {
		robbed = append(robbed, ex(conn1, corr, at, at+1, code, int64(corr), b))
		corr++
		at += 10
	}
	next(7, recs(0xa, 1))
	for i := range 6 {
		next(0, recs(uint32(0x100+i), uint64(100+i)))
	}
	next(7, recs(0xb, 2))
	next(0, recs(0xa, 1))
	next(0, recs(0x200, 200))
	next(0, recs(0x201, 201))
	next(0, recs(0xd, 2, 300))

	tests := []struct {
		name      string
		exchanges []*decode.Exchange
		prints    int64 // Stats.RecordPrints: records filed for matching
		resends   int   // record_resend findings
	}{
		{
			name: "failed, then re-sent as the same bytes",
			exchanges: append([]*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1, 2)),
				ex(conn1, 2, 600, 610, 0, 2, recs(0xa, 1, 2)),
			}, later(3, 700)...),
			prints: 2 + 2, // the failed batch's, and its retry's (it may carry records re-batched before), none after
		},
		{
			name: "failed, then rebuilt",
			exchanges: append([]*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1, 2)),
				ex(conn1, 2, 600, 610, 0, 2, recs(0xb, 1, 2)),
			}, later(3, 700)...),
			prints:  2 + 2 + 3,
			resends: 1,
		},
		{
			name: "two failed, one re-sent as the same bytes",
			exchanges: append([]*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1)),
				ex(conn1, 2, 1, 521, 7, 1, recs(0xb, 2)),
				ex(conn1, 3, 600, 610, 0, 2, recs(0xa, 1)),
			}, later(4, 700)...),
			prints: 1 + 1 + 1 + 3, // the retry too; the other failure's retry may come in any of the 3
		},
		{
			name: "re-sent as the same bytes, failed again",
			exchanges: append([]*decode.Exchange{
				ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1)),
				ex(conn1, 2, 600, 1100, 7, 1, recs(0xa, 1)),
			}, later(3, 1200)...),
			prints: 1 + 1 + 3,
		},
		{
			name:      "the other failure keeps its own batches",
			exchanges: robbed,
			prints:    1 + 6 + 1 + 1 + 2 + 2, // F1, its 6, F2, F1's retry, F2's next 2 and the rebuilt batch
			resends:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{})
			for _, x := range tt.exchanges {
				d.Produce(x)
			}
			if got := d.Stats().RecordPrints; got != tt.prints {
				t.Errorf("%d records filed for matching, want %d", got, tt.prints)
			}
			if got := countKind(d.Flush(), KindRecordResend); got != tt.resends {
				t.Errorf("%d record_resend findings, want %d", got, tt.resends)
			}
		})
	}
}

// TestHotPartitionsExpire: a failure whose partition is never sent to again
// stops making every other batch look up the hot partitions once its
// window has passed.
func TestHotPartitionsExpire(t *testing.T) {
	d := New(Options{})
	d.Produce(ex(conn1, 1, 0, 520, 7, 0, recs(0xa, 1)))
	d.Produce(ex(conn1, 2, 600, 610, 0, 0, part(recs(0xb, 2), 1)))
	if len(d.hot) != 1 {
		t.Fatalf("%d hot partitions after the failure, want 1", len(d.hot))
	}
	late := float64(d.recWindow()/int64(time.Millisecond)) + 1000
	d.Produce(ex(conn1, 3, late, late+10, 0, 1, part(recs(0xc, 3), 1)))
	if len(d.hot) != 0 {
		t.Errorf("%d hot partitions past the window, want none", len(d.hot))
	}
}
