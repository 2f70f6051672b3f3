package detect

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// report is what a test expects of one OnFinding call.
type report struct {
	revision int
	attempts int
	verdict  Verdict
}

func (r report) String() string {
	return fmt.Sprintf("rev %d, %d attempts, %s", r.revision, r.attempts, r.verdict)
}

func reportsOf(fs []Finding) []report {
	var rs []report
	for _, f := range fs {
		rs = append(rs, report{f.Revision, len(f.Attempts), f.Verdict})
	}
	return rs
}

// step is one input to a streaming Detector: an exchange, or, when x is nil, an
// Advance to advanceMs; want is what OnFinding gets during it.
type step struct {
	x         *decode.Exchange
	advanceMs float64
	want      []report
}

func advance(msAt float64, want ...report) step { return step{advanceMs: msAt, want: want} }
func feed(x *decode.Exchange, want ...report) step {
	return step{x: x, want: want}
}

// TestStreamingDecided: with Streaming, a finding is reported when the last attempt
// sent has an answer no retry can follow, else when Settle (here 1 s) or
// Window (here 1 min) passes, also with no traffic (Advance); a later attempt
// of a reported batch reports it again.
func TestStreamingDecided(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		steps []step
		stats Stats // the counts checked: Findings, Revisions, Settled, Expired
	}{
		{"success answer decides at once", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 0, 6, plain(1)), report{0, 2, Duplicated}),
			advance(120_000),
		}, Stats{Findings: 1, Expired: 1}},
		{"DUPLICATE_SEQUENCE_NUMBER decides at once", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, idem(3, 1))),
			feed(ex(conn1, 2, 20, 30, 46, -1, idem(3, 1)), report{0, 2, Deduplicated}),
		}, Stats{Findings: 1}},
		{"non-retriable error decides at once", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 10, -1, plain(1)), report{0, 2, Single}), // MESSAGE_TOO_LARGE
		}, Stats{Findings: 1}},
		{"unknown error code is final", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 9999, -1, plain(1)), report{0, 2, Single}),
		}, Stats{Findings: 1}},
		{"retriable error waits for Settle", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 6, -1, plain(1))), // NOT_LEADER_OR_FOLLOWER
			advance(1029),
			advance(1030), // exactly Settle after the answer: not yet
			advance(1031, report{0, 2, Single}),
			advance(120_000),
		}, Stats{Findings: 1, Settled: 1, Expired: 1}},
		{"retriable error waits for Settle, traffic moves time", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 20, 6, plain(1))), // NOT_ENOUGH_REPLICAS_AFTER_APPEND
			feed(ex(conn1, 3, 1000, 1001, 0, 7, plain(2))),
			feed(ex(conn1, 4, 1040, 1041, 0, 8, plain(3)), report{0, 2, Duplicated}),
		}, Stats{Findings: 1, Settled: 1}},
		{"retriable error then a retry answered NONE", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 7, 6, plain(1))),
			feed(ex(conn1, 3, 40, 50, 0, 7, plain(1)), report{0, 3, Duplicated}),
			advance(5000),
		}, Stats{Findings: 1}},
		{"unanswered last attempt waits for Settle", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(noResp(ex(conn1, 2, 20, noAnswer, 0, 0, plain(1)), decode.NoResponseClosed)),
			advance(1020),
			advance(1021, report{0, 2, Unconfirmed}),
		}, Stats{Findings: 1, Settled: 1}},
		{"partition missing from the answer waits for Settle", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(func() *decode.Exchange {
				x := ex(conn1, 2, 20, 30, 0, 6, plain(1))
				x.Batches[0].Response = nil
				return x
			}()),
			advance(1031, report{0, 2, Unconfirmed}),
		}, Stats{Findings: 1, Settled: 1}},
		{"the last attempt sent decides, not the last to complete", Options{}, []step{
			feed(ex(conn1, 2, 20, 30, 7, 6, plain(1))),
			feed(noResp(ex(conn1, 1, 0, noAnswer, 0, 0, plain(1)), decode.NoResponseLaterSeen)),
			advance(1031, report{0, 2, Unconfirmed}),
		}, Stats{Findings: 1, Settled: 1}},
		{"acks=0 decides at once", Options{}, []step{
			feed(acks0(ex(conn1, 1, 0, noAnswer, 0, 0, plain(1)))),
			feed(acks0(ex(conn1, 2, 100, noAnswer, 0, 0, plain(1))), report{0, 2, Unconfirmed}),
		}, Stats{Findings: 1}},
		{"Window decides when Settle is longer", Options{Settle: time.Hour}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 7, 6, plain(1))),
			advance(60_030),
			advance(60_031, report{0, 2, Duplicated}),
		}, Stats{Findings: 1, Expired: 1}},
		{"MaxBatches decides the evicted", Options{MaxBatches: 1}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 7, 6, plain(1))),
			feed(ex(conn1, 3, 40, 50, 0, 7, plain(2)), report{0, 2, Duplicated}),
		}, Stats{Findings: 1, Evicted: 1}},
		{"a later attempt reports again", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 6, -1, plain(1))),
			feed(ex(conn1, 3, 40, 50, 0, 7, plain(1)), report{0, 3, Duplicated}),
			feed(ex(conn1, 4, 5000, 5010, 0, 8, plain(1)), report{1, 4, Duplicated}),
			advance(10_000),
		}, Stats{Findings: 1, Revisions: 1}},
		{"a late attempt that changes the verdict", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 6, -1, plain(1))),
			feed(ex(conn1, 2, 20, 30, 0, 7, plain(1)), report{0, 2, Single}),
			feed(ex(conn1, 3, 40, 50, 0, 8, plain(1)), report{1, 3, Duplicated}),
		}, Stats{Findings: 1, Revisions: 1}},
		{"an earlier attempt completing late reports again at once", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 3, 2000, 2010, 0, 6, plain(1)), report{0, 2, Duplicated}),
			feed(noResp(ex(conn1, 2, 1000, noAnswer, 0, 0, plain(1)), decode.NoResponseClosed), report{1, 3, Duplicated}),
		}, Stats{Findings: 1, Revisions: 1}},
		{"a revision waits for Settle again", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 7, 6, plain(1))),
			advance(1031, report{0, 2, Duplicated}),
			feed(ex(conn1, 3, 2000, 2010, 7, 7, plain(1))),
			advance(3010),
			advance(3011, report{1, 3, Duplicated}),
		}, Stats{Findings: 1, Revisions: 1, Settled: 2}},
		{"after the window a resend is a new batch", Options{}, []step{
			feed(ex(conn1, 1, 0, 10, 7, 5, plain(1))),
			feed(ex(conn1, 2, 20, 30, 0, 6, plain(1)), report{0, 2, Duplicated}),
			advance(60_031),
			feed(ex(conn1, 3, 60_040, 60_050, 0, 7, plain(1))),
			advance(200_000),
		}, Stats{Findings: 1, Expired: 2}},
		{"no traffic, nothing due", Options{}, []step{
			advance(0), advance(-5), advance(1e9),
		}, Stats{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Finding
			opts := tt.opts
			opts.Streaming, opts.OnFinding = true, func(f Finding) { got = append(got, f) }
			if opts.Window == 0 {
				opts.Window = time.Minute
			}
			if opts.Settle == 0 {
				opts.Settle = time.Second
			}
			d := New(opts)
			for i, s := range tt.steps {
				got = got[:0]
				if s.x != nil {
					d.Produce(s.x)
				} else {
					d.Advance(ms(s.advanceMs))
				}
				if rs := reportsOf(got); !reflect.DeepEqual(rs, s.want) {
					t.Fatalf("step %d: reported %v, want %v", i, rs, s.want)
				}
			}
			s := d.Stats()
			if s.Findings != tt.stats.Findings || s.Revisions != tt.stats.Revisions ||
				s.Settled != tt.stats.Settled || s.Expired != tt.stats.Expired || s.Evicted != tt.stats.Evicted {
				t.Errorf("stats: findings %d revisions %d settled %d expired %d evicted %d, want %d %d %d %d %d",
					s.Findings, s.Revisions, s.Settled, s.Expired, s.Evicted, tt.stats.Findings,
					tt.stats.Revisions, tt.stats.Settled, tt.stats.Expired, tt.stats.Evicted)
			}
		})
	}
}

// TestStreamingFlush: Flush reports what was not reported yet or changed since,
// in order, and returns those, or with KeepFindings every finding's latest
// revision; the counts follow the latest verdict of each finding.
func TestStreamingFlush(t *testing.T) {
	feedAll := func(d *Detector) {
		d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(1)))             // A: decided at once
		d.Produce(ex(conn1, 2, 20, 30, 0, 6, plain(1)))            //
		d.Produce(ex(conn1, 3, 100, 110, 7, 7, part(plain(2), 1))) // B: waits for a retry
		d.Produce(ex(conn1, 4, 120, 130, 7, 8, part(plain(2), 1))) //
		d.Produce(ex(conn2, 5, 50, 60, 6, -1, plain(3)))           // C: reported, then
		d.Produce(ex(conn2, 6, 70, 80, 0, 9, plain(3)))            // revised by a resend
		d.Produce(noResp(ex(conn2, 7, 200, noAnswer, 0, 0, plain(3)), decode.NoResponseClosed))
	}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepFindings=%v", keep), func(t *testing.T) {
			var emitted []Finding
			d := New(Options{Streaming: true, KeepFindings: keep, OnFinding: func(f Finding) { emitted = append(emitted, f) }})
			feedAll(d)
			if rs, want := reportsOf(emitted), []report{{0, 2, Duplicated}, {0, 2, Single}}; !reflect.DeepEqual(rs, want) {
				t.Fatalf("before Flush: reported %v, want %v", rs, want)
			}
			before := len(emitted)
			got := d.Flush()
			rest := emitted[before:]
			// C (first sent at 50 ms) sorts before B (100 ms).
			if rs, want := reportsOf(rest), []report{{1, 3, Unconfirmed}, {0, 2, Duplicated}}; !reflect.DeepEqual(rs, want) {
				t.Fatalf("Flush reported %v, want %v", rs, want)
			}
			want := rest
			if keep {
				want = []Finding{emitted[0], rest[0], rest[1]} // A at 0 ms, C at 50, B at 100
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Flush returned %v, want %v", reportsOf(got), reportsOf(want))
			}
			s := d.Stats()
			if s.Findings != 3 || s.Revisions != 1 || s.Remembered != 0 ||
				!reflect.DeepEqual(s.ByVerdict, map[Verdict]int64{Duplicated: 2, Unconfirmed: 1}) ||
				s.Topics[0].Findings != 3 || s.Topics[0].Duplicated != 2 {
				t.Errorf("stats %+v", s)
			}
			n := len(emitted)
			if again := d.Flush(); len(emitted) != n || (keep && !reflect.DeepEqual(again, got)) || (!keep && len(again) != 0) {
				t.Errorf("second Flush reported %d, returned %d findings", len(emitted)-n, len(again))
			}
		})
	}
}

// TestStreamingSameFindingsAsAnalyze: whatever Streaming reports along the way, the
// latest revision of each finding is what a detector without Streaming gives.
func TestStreamingSameFindingsAsAnalyze(t *testing.T) {
	for seed := range 200 {
		data := make([]byte, 4*40)
		x := uint32(seed)*2654435761 + 1
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		checkStreaming(t, exchangesFrom(data))
	}
}

// checkStreaming feeds xs to a detector without Streaming and to streaming ones with a
// short Settle, and checks that they agree: every revision follows the
// report it revises and holds more attempts, the latest reports are the
// findings without Streaming, and so is Flush's list with KeepFindings.
func checkStreaming(t *testing.T, xs []*decode.Exchange) {
	t.Helper()
	plainRun := New(Options{})
	for _, x := range xs {
		plainRun.Produce(x)
	}
	want := plainRun.Flush()
	for _, keep := range []bool{false, true} {
		var emitted []Finding
		d := New(Options{Streaming: true, KeepFindings: keep, Settle: 20 * time.Millisecond,
			OnFinding: func(f Finding) { emitted = append(emitted, f) }})
		for _, x := range xs {
			d.Produce(x)
		}
		got := d.Flush()
		for i, f := range emitted {
			if f.ID == 0 {
				t.Fatalf("report %d has no id: %+v", i, f)
			}
			if f.Revision == 0 {
				for _, e := range emitted[:i] {
					if e.ID == f.ID {
						t.Fatalf("report %d, a first report, has the id of an earlier one: %+v", i, emitted)
					}
				}
				continue
			}
			revises := false
			for _, e := range emitted[:i] {
				if e.Revision == f.Revision-1 && len(e.Attempts) < len(f.Attempts) && holdsAttempts(f, e) && e.ID == f.ID {
					revises = true
				}
			}
			if !revises {
				t.Fatalf("report %d (revision %d) revises no earlier report: %+v", i, f.Revision, emitted)
			}
		}
		latest := latestOf(emitted)
		for i := range latest {
			latest[i].Revision, latest[i].ID = 0, 0 // a live run's bookkeeping
		}
		if !sameFindings(sortedFindings(latest), want) {
			t.Fatalf("live (keep %v): latest reports\n %+v\nwant %+v", keep, latest, want)
		}
		if keep {
			for i := range got {
				got[i].Revision, got[i].ID = 0, 0
			}
			if !sameFindings(got, want) {
				t.Fatalf("live Flush with KeepFindings\n %+v\nwant %+v", got, want)
			}
		}
		if s, ps := d.Stats(), plainRun.Stats(); s.Findings != ps.Findings || !reflect.DeepEqual(s.ByVerdict, ps.ByVerdict) {
			t.Fatalf("live stats %+v, want %+v", s, ps)
		}
	}
}

// latestOf keeps, of findings reported in order, only the last report of
// each: a revision holds every attempt of the ones before, so each report
// supersedes the earlier reports whose attempts it holds.
func latestOf(fs []Finding) []Finding {
	out := []Finding{}
	for i, f := range fs {
		superseded := false
		for _, g := range fs[i+1:] {
			if g.Revision > 0 && holdsAttempts(g, f) {
				superseded = true
				break
			}
		}
		if !superseded {
			out = append(out, f)
		}
	}
	return out
}

func holdsAttempts(g, f Finding) bool {
	// Not f.ConnID: a finding's connection is its first attempt's, and an
	// attempt sent earlier on another connection may come later.
	if g.Partition != f.Partition || g.Topic != f.Topic {
		return false
	}
	for _, a := range f.Attempts {
		found := false
		for _, b := range g.Attempts {
			if a.ConnID == b.ConnID && a.CorrelationID == b.CorrelationID && a.Time.Equal(b.Time) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sameFindings is reflect.DeepEqual, but for an empty list nil or not.
func sameFindings(a, b []Finding) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

func sortedFindings(fs []Finding) []Finding {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, compareFindings)
	return out
}

// TestNotStreamingUnchanged: without Streaming nothing is reported before Window
// passes, whatever the answers, and Advance only moves the window.
func TestNotStreamingUnchanged(t *testing.T) {
	var emitted []Finding
	d := New(Options{Window: time.Minute, OnFinding: func(f Finding) { emitted = append(emitted, f) }})
	d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(1)))
	d.Produce(ex(conn1, 2, 20, 30, 0, 6, plain(1)))
	d.Advance(ms(59_000)) // past DefaultSettle
	if len(emitted) != 0 {
		t.Fatalf("reported %d findings before the window passed", len(emitted))
	}
	d.Advance(ms(60_031))
	if rs, want := reportsOf(emitted), []report{{0, 2, Duplicated}}; !reflect.DeepEqual(rs, want) {
		t.Fatalf("reported %v, want %v", rs, want)
	}
	if got := d.Flush(); !reflect.DeepEqual(got, emitted) {
		t.Errorf("Flush returned %v", reportsOf(got))
	}
}
