package profile

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// legacyProducers is Profiler.Producers as it was before Finding: the
// re-sends of every finding of the run tallied at once, from scratch, each
// finding as it stands. It is the reference the incremental tally must
// equal; the rest of a profile is Producers' own (producerState.profile),
// and so are the sends known retried, which Finding notes as it comes.
func legacyProducers(pr *Profiler, findings []detect.Finding) []Producer {
	acc := map[ProducerKey]*tally{}
	for i := range findings {
		f := &findings[i]
		if f.Kind == detect.KindRecordDuplicate {
			continue
		}
		k := KeyOf(f.Client.Addr(), f.ClientID, f.ProducerID)
		if pr.m[k] == nil {
			continue
		}
		r := acc[k]
		if r == nil {
			r = &tally{byVerdict: map[detect.Verdict]int64{}}
			acc[k] = r
		}
		r.resent++
		r.resends += int64(max(len(f.Attempts)-1, 0) + f.AttemptsOmitted)
		r.byVerdict[f.Verdict]++
		if f.Verdict == detect.Duplicated {
			r.mostCopies = max(r.mostCopies, len(f.AppendedOffsets))
		}
		for j := 1; j < len(f.Attempts); j++ {
			r.causes = addCause(r.causes, &f.Attempts[j-1], &f.Attempts[j])
		}
		if ch := changeOf(f); ch != nil {
			r.renumbered++
			r.changes = mergeChange(r.changes, *ch)
		}
	}
	out := make([]Producer, 0, len(pr.m))
	for k, s := range pr.m {
		r := acc[k]
		if r == nil {
			r = &tally{}
		}
		out = append(out, s.profile(r))
	}
	sortProducers(out)
	return out
}

// liveWindow and liveSettle are the live Detector's options in these tests.
const (
	liveWindow = time.Minute
	liveSettle = time.Second
)

// runProfiled feeds xs to a Profiler and a Detector as a pipeline does; with
// live, the Detector is live (keeping its findings) and every report goes
// to the Profiler as it comes, else the findings Flush returns do. It
// returns the Profiler and the run's findings (the latest report of each).
func runProfiled(live bool, popts Options, xs []*decode.Exchange, each func(*Profiler)) (*Profiler, []detect.Finding) {
	prof := New(popts)
	opts := detect.Options{}
	if live {
		opts = detect.Options{Streaming: true, KeepFindings: true, Window: liveWindow, Settle: liveSettle,
			OnFinding: func(f detect.Finding) { prof.Finding(&f) }}
	}
	det := detect.New(opts)
	for _, x := range xs {
		prof.Produce(x)
		det.Produce(x)
		if each != nil {
			each(prof)
		}
	}
	fs := det.Flush()
	if !live {
		for i := range fs {
			prof.Finding(&fs[i])
		}
	}
	return prof, fs
}

// revised: a batch answered REQUEST_TIMED_OUT after the append, re-sent
// with no answer (reported unconfirmed once Settle passes), then re-sent
// again and appended (reported again: duplicated).
func revised(c *decode.ConnInfo, crc uint32, atMs float64) []*decode.Exchange {
	return []*decode.Exchange{
		ex(c, 1, atMs, atMs+10, 7, 5, plain(crc)),
		noResp(ex(c, 2, atMs+20, noAnswer, 0, 0, plain(crc)), decode.NoResponseClosed),
		ex(c, 3, atMs+1500, atMs+1501, 0, 50, plain(0xfff)), // moves time past Settle
		ex(c, 4, atMs+2000, atMs+2010, 0, 6, plain(crc)),
	}
}

// TestProfilerIncremental: producers built from every report of a live run
// as it comes equal those built from the run's findings at once.
func TestProfilerIncremental(t *testing.T) {
	gzip := plain(0xb)
	gzip.Attributes = 1
	mixed := []*decode.Exchange{
		ex(conn1, 1, 0, 1, 7, 5, plain(0xa)), // REQUEST_TIMED_OUT after the append
		ex(conn1, 2, 10, 14, 0, 6, plain(0xa)),
		ex(conn1, 3, 20, 22, 0, 7, gzip),
		ex(conn2, 1, 30, 31, 6, -1, idem(0, 0x10)), // NOT_LEADER, then appended
		ex(conn2, 2, 40, 41, 0, 9, idem(0, 0x10)),
		ex(conn2, 3, 50, 51, 0, 9, idem(0, 0x10)), // a late resend: revised
		ex(conn1, 4, 60, 63, 7, 8, plain(0xc)),    // timed out, never re-sent
		ex(conn1, 5, 70, 71, 0, 10, plain(0xd)),
	}
	var many []*decode.Exchange
	for i := range 40 {
		many = append(many, revised(conn1, uint32(0x100+i), float64(i)*3000)...)
	}
	// A retry answered before its unanswered first attempt completes (on
	// a connection that closed later): the revision's first attempt is
	// another than the first report's.
	lateFirst := []*decode.Exchange{
		ex(conn2, 10, 100, 110, 6, -1, plain(0xa)), // NOT_LEADER, retried
		ex(conn2, 11, 200, 210, 0, 5, plain(0xa)),  // appended: reported
		ex(conn2, 12, 3000, 3001, 0, 6, plain(0xb)),
		noResp(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa)), decode.NoResponseClosed),
	}
	// A failed batch's records re-sent in two batches (sarama re-batching):
	// two record-level findings of one first attempt.
	split := []*decode.Exchange{
		ex(conn1, 1, 0, 10, 7, 0, recs(0xa, 1, 2)),
		ex(conn1, 2, 100, 110, 0, 2, recs(0xb, 1, 100)),
		ex(conn1, 3, 200, 210, 0, 4, recs(0xc, 2, 101)),
		ex(conn1, 4, 5000, 5001, 0, 6, recs(0xd, 102)),
	}
	tests := []struct {
		name string
		live bool
		opts Options
		xs   []*decode.Exchange
	}{
		{"analyze: findings at Flush", false, Options{}, mixed},
		{"live: reports as they come", true, Options{Revisable: liveWindow + liveSettle}, mixed},
		{"live: revised findings", true, Options{Revisable: liveWindow + liveSettle}, revised(conn1, 1, 0)},
		{"live: many revised findings, tallied for good as they go", true, Options{Revisable: liveWindow + liveSettle, MaxPending: 8}, many},
		{"analyze: many findings", false, Options{}, many},
		{"live: first attempt completing after its retry", true, Options{Revisable: liveWindow + liveSettle}, lateFirst},
		{"live: records of one failure in two findings", true, Options{Revisable: liveWindow + liveSettle}, split},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof, fs := runProfiled(tt.live, tt.opts, tt.xs, nil)
			if len(fs) == 0 {
				t.Fatal("no finding: the test feeds none")
			}
			got, want := prof.Producers(), legacyProducers(prof, fs)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("incremental:\n%+v\nat once:\n%+v", got, want)
			}
		})
	}
}

// TestProfilerRevision: a finding reported unconfirmed, then duplicated
// counts once, with the later verdict; tallied for good once it can no
// longer be revised, it stays counted; the findings kept revisable stay
// within MaxPending.
func TestProfilerRevision(t *testing.T) {
	t.Run("revised counts once, with the later verdict", func(t *testing.T) {
		var verdicts []detect.Verdict
		prof := New(Options{Revisable: liveWindow + liveSettle})
		det := detect.New(detect.Options{Streaming: true, Window: liveWindow, Settle: liveSettle, OnFinding: func(f detect.Finding) {
			verdicts = append(verdicts, f.Verdict)
			prof.Finding(&f)
		}})
		for _, x := range revised(conn1, 1, 0) {
			prof.Produce(x)
			det.Produce(x)
		}
		if want := []detect.Verdict{detect.Unconfirmed, detect.Duplicated}; !slices.Equal(verdicts, want) {
			t.Fatalf("reports %v, want %v", verdicts, want)
		}
		p := prof.Producers()[0]
		if p.Resent != 1 || p.Resends != 2 || !reflect.DeepEqual(p.ByVerdict, map[detect.Verdict]int64{detect.Duplicated: 1}) || p.MostCopies != 2 {
			t.Errorf("resent %d resends %d verdicts %v copies %d; want 1, 2, duplicated 1, 2", p.Resent, p.Resends, p.ByVerdict, p.MostCopies)
		}
		det.Flush()
		if q := prof.Producers()[0]; !reflect.DeepEqual(q, p) {
			t.Errorf("after Flush:\n%+v\nwant\n%+v", q, p)
		}
	})

	t.Run("tallied for good once not revisable, still counted", func(t *testing.T) {
		// Findings two Revisable spans apart: at each report
		// every earlier one is past revision.
		var xs []*decode.Exchange
		for i := range 9 {
			at := float64(i) * float64(2*(liveWindow+liveSettle)/time.Millisecond)
			xs = append(xs, ex(conn1, int32(2*i+1), at, at+1, 7, int64(2*i), plain(uint32(i+1))),
				ex(conn1, int32(2*i+2), at+10, at+11, 0, int64(2*i+1), plain(uint32(i+1))))
		}
		prof, _ := runProfiled(true, Options{Revisable: liveWindow + liveSettle, MaxPending: 8}, xs, nil)
		if n := prof.Pending(); n != 1 {
			t.Errorf("%d findings pending, want 1 (the others past revision)", n)
		}
		p := prof.Producers()[0]
		if p.Resent != 9 || p.ByVerdict[detect.Duplicated] != 9 || p.Resends != 9 || len(p.Causes) != 1 || p.Causes[0].Count != 9 {
			t.Errorf("resent %d verdicts %v resends %d causes %+v; want 9 duplicated, 9 re-sends", p.Resent, p.ByVerdict, p.Resends, p.Causes)
		}
	})

	t.Run("bounded by MaxPending", func(t *testing.T) {
		// 100 findings in one Revisable span: the oldest are tallied early.
		var xs []*decode.Exchange
		for i := range 100 {
			at := float64(i * 30)
			xs = append(xs, ex(conn1, int32(2*i+1), at, at+1, 7, int64(2*i), plain(uint32(i+1))),
				ex(conn1, int32(2*i+2), at+10, at+11, 0, int64(2*i+1), plain(uint32(i+1))))
		}
		most := 0
		prof, fs := runProfiled(true, Options{Revisable: liveWindow + liveSettle, MaxPending: 4}, xs,
			func(p *Profiler) { most = max(most, p.Pending()) })
		if most > 4 {
			t.Errorf("%d findings pending at once, MaxPending 4", most)
		}
		if got, want := prof.Producers(), legacyProducers(prof, fs); !reflect.DeepEqual(got, want) || got[0].Resent != 100 {
			t.Errorf("resent %d, want 100; incremental\n%+v\nat once\n%+v", got[0].Resent, got, want)
		}
	})

	t.Run("application duplicates and unprofiled producers are not tallied", func(t *testing.T) {
		prof := New(Options{Revisable: time.Minute})
		prof.Produce(ex(conn1, 1, 0, 1, 0, 0, plain(1)))
		// Named as a live Detector names its findings (Finding.ID).
		f := detect.Finding{Kind: detect.KindRecordResend, Client: conn1.Client, ClientID: &rdkafka, ProducerID: -1, Verdict: detect.Duplicated, ID: 1,
			Attempts: []detect.Attempt{{ConnID: 1, CorrelationID: 1, Time: ms(0)}, {ConnID: 1, CorrelationID: 2, Time: ms(10), Cause: detect.CauseClientTimeout}}}
		prof.Finding(&f)
		other := f
		other.ClientID, other.ID = nil, 2
		other.Attempts = []detect.Attempt{{ConnID: 2, CorrelationID: 1, Time: ms(0)}, {ConnID: 2, CorrelationID: 2, Time: ms(10)}}
		prof.Finding(&other) // a producer never seen
		if p := prof.Producers()[0]; p.Resent != 1 {
			t.Fatalf("resent %d, want 1", p.Resent)
		}
		f.Kind = detect.KindRecordDuplicate // the same records, reported again as the application's doing
		prof.Finding(&f)
		if p := prof.Producers()[0]; p.Resent != 0 || prof.Pending() != 0 {
			t.Errorf("resent %d, %d pending; want 0, 0", p.Resent, prof.Pending())
		}
	})
}
