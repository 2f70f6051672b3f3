package detect

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/kdupcap/kdupcap/decode"
)

// TestBoundedState: over a long capture the batches remembered, and the age
// queue behind them, stay bounded by the window of packet time (or by
// MaxBatches), also when some exchanges complete long after they were sent.
func TestBoundedState(t *testing.T) {
	const n = 200_000 // one exchange per millisecond: 200 s of capture
	tests := []struct {
		name     string
		opts     Options
		late     int     // every late-th exchange completes, unanswered, 30 s after it was sent
		maxLive  int     // bound on remembered batches at any time
		resendMs float64 // every 100th batch is re-sent this much later; 0: none
	}{
		{"window", Options{Window: time.Minute}, 0, 60_000 + 10, 0},
		{"window, late completions", Options{Window: time.Minute}, 10, 90_000 + 10, 0},
		{"window, resends", Options{Window: time.Minute}, 0, 60_000 + 600 + 10, 5000}, // a resent batch lives a window after its resend
		{"max batches", Options{Window: time.Hour, MaxBatches: 1000}, 7, 1000, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(tt.opts)
			maxLive, maxQueue := 0, 0
			for i := range n {
				sent := float64(i)
				x := ex(conn1, int32(i), sent, sent+0.5, 0, int64(i), plain(uint32(i)))
				if tt.late > 0 && i%tt.late == 0 && i >= 30_000 {
					x = noResp(ex(conn1, int32(i), sent-30_000, noAnswer, 0, 0, plain(uint32(i))), decode.NoResponseClosed)
				}
				d.Produce(x)
				if tt.resendMs > 0 && i%100 == 0 && i > int(tt.resendMs) {
					j := i - int(tt.resendMs)
					d.Produce(ex(conn1, int32(n+i), sent, sent+0.5, 0, int64(n+i), plain(uint32(j))))
				}
				maxLive = max(maxLive, d.remembered)
				maxQueue = max(maxQueue, d.age.Len())
			}
			if maxLive > tt.maxLive {
				t.Errorf("%d batches remembered at once, want at most %d", maxLive, tt.maxLive)
			}
			if maxQueue > 2*tt.maxLive+2048 {
				t.Errorf("age queue held %d entries, want about %d", maxQueue, tt.maxLive)
			}
			got := d.Flush()
			s := d.Stats()
			if s.Expired+s.Evicted == 0 {
				t.Errorf("nothing expired or evicted: %+v", s)
			}
			if tt.resendMs > 0 && tt.opts.MaxBatches == 0 && len(got) != n/100-int(tt.resendMs)/100-1 {
				t.Errorf("%d findings, want every resend found", len(got))
			}
		})
	}
}

// TestWindowEdge: a resend sent within the window after the batch's last
// attempt is grouped with it, even when its answer comes after the window.
func TestWindowEdge(t *testing.T) {
	tests := []struct {
		name     string
		resendMs float64 // send time of the resend; the first is answered at 10 ms
		want     int     // findings
	}{
		{"sent inside, answered outside", 60_005, 1},
		{"sent at the edge", 60_009, 1},
		{"sent outside", 60_011, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{Window: time.Minute})
			d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(1)))
			d.Produce(ex(conn1, 2, tt.resendMs, tt.resendMs+20, 0, 6, plain(1)))
			if got := d.Flush(); len(got) != tt.want {
				t.Errorf("%d findings, want %d", len(got), tt.want)
			}
		})
	}
}

// liveRun feeds n exchanges of one batch each, 10 ms of packet time apart
// (2 million are 5.5 hours), to a streaming Detector with a Window of 2 minutes
// and the default Settle. Every 100th exchange re-sends the batch sent 5 s
// before; the resend is answered NONE (decided at once) or
// REQUEST_TIMED_OUT (decided by Settle) in turn, and every batch whose
// resend was answered NONE is sent a third time 5.5 s later (a revision).
// It returns the growth of the heap in use (after a GC) over the second
// half of the run, and the reports made in that half. Go's maps reach their
// steady size after some tens of windows of churn (deleted entries leave
// tombstones until a rehash), so the first half, 80 windows, warms them up.
func liveRun(t *testing.T, n int, keep bool) (growth int64, reported int) {
	t.Helper()
	d := New(Options{Streaming: true, KeepFindings: keep, Window: 2 * time.Minute, OnFinding: func(Finding) { reported++ }})
	resp := decode.PartitionResponse{LogAppendTime: -1}
	x := &decode.Exchange{Conn: conn1, ClientID: &rdkafka, Version: 9, Acks: -1, TimeoutMillis: 30000,
		Responded: true, Batches: []decode.Batch{plain(0)}}
	maxLive, maxAge, maxSettling, maxReports := 0, 0, 0, 0
	var half runtime.MemStats
	for i := range n {
		if i == n/2 {
			runtime.GC()
			runtime.ReadMemStats(&half)
			reported = 0
		}
		j, code := i, int16(0)
		switch {
		case i%100 == 0 && i >= 600: // resend the batch of exchange i-501
			j = i - 501
			if i/100%2 == 1 {
				code = 7
			}
		case i%100 == 50 && i >= 1200 && (i-550)/100%2 == 0: // send it again
			j = i - 550 - 501
		}
		bt := &x.Batches[0]
		bt.Hash, bt.CRC = uint64(j)*0x9e3779b97f4a7c15, uint32(j)
		bt.Partition = int32(j % 16)
		x.CorrelationID = int32(i)
		x.RequestTime = t0.Add(time.Duration(i) * 10 * time.Millisecond)
		x.ResponseTime = x.RequestTime.Add(2 * time.Millisecond)
		resp.ErrorCode, resp.BaseOffset = code, int64(i)
		bt.Response = &resp
		d.Produce(x)
		maxLive = max(maxLive, d.remembered)
		maxAge = max(maxAge, d.age.Len())
		maxSettling = max(maxSettling, d.settling.Len())
		maxReports = max(maxReports, len(d.reports))
	}
	var end runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&end)
	// A window of 2 minutes is 12,000 exchanges: 12,000 batches, of which
	// 120 were re-sent, and 60 of them a third time.
	if maxLive > 12_000+10 || maxAge > 2*12_000+2048 || maxSettling > 2048 || maxReports > 120+10 {
		t.Errorf("remembered %d batches, age queue %d, settling %d, reported %d at most",
			maxLive, maxAge, maxSettling, maxReports)
	}
	if !keep && (len(d.findings) != 0 || cap(d.fresh) != 0) {
		t.Errorf("live detector holds %d findings", len(d.findings)+cap(d.fresh))
	}
	d.Flush()
	s := d.Stats()
	// The last few resends are decided by Flush, not Settle, and their
	// third sends would come after the end.
	if want := int64(n/100 - 6); s.Findings != want || s.Revisions < want/2-10 || s.Settled < want/2-20 {
		t.Errorf("findings %d revisions %d settled %d, want %d, about %d, about %d", s.Findings, s.Revisions, s.Settled, want, want/2, want/2)
	}
	runtime.KeepAlive(d)
	return int64(end.HeapInuse) - int64(half.HeapInuse), reported
}

// TestStreamingMemoryBound: over hours of packet time a streaming Detector keeps the
// batches of one window and none of the findings it reported, so the heap
// does not grow in the second half of a long run; with KeepFindings it
// grows by at least the findings kept, which shows the measure sees them.
func TestStreamingMemoryBound(t *testing.T) {
	n := 2_000_000
	if testing.Short() {
		n = 1_000_000
	}
	// The least a kept finding costs: the Finding, and two attempts with
	// their responses (a third for half of them, the reasons not counted).
	perFinding := int64(unsafe.Sizeof(Finding{}) + 2*(unsafe.Sizeof(Attempt{})+unsafe.Sizeof(Response{})))

	growth, reported := liveRun(t, n, false)
	bound := perFinding * int64(reported) / 16
	t.Logf("live: heap in use grew %d B over the second half (%d reports; %d B each if kept; bound %d B)",
		growth, reported, perFinding, bound)
	if growth > bound {
		t.Errorf("heap in use grew %d B over %d reports, want at most %d B", growth, reported, bound)
	}

	kept, reported := liveRun(t, n, true)
	findings := int64(reported) * 2 / 3 // a third of the reports are revisions
	t.Logf("KeepFindings: heap in use grew %d B over the second half (%d findings)", kept, findings)
	if kept < findings*perFinding {
		t.Errorf("with KeepFindings heap in use grew %d B for %d findings: the measure misses them", kept, findings)
	}
}

// TestTopicsBound: batches each to a new topic are counted one by one up
// to MaxTopics topics, the rest together under OtherTopics; no batch goes
// uncounted, and a finding on a topic beyond the bound counts there too.
func TestTopicsBound(t *testing.T) {
	const extra = 100
	d := New(Options{})
	for i := range MaxTopics + extra {
		b := plain(uint32(i))
		b.Topic = fmt.Sprintf("topic-%06d", i)
		d.Produce(ex(conn1, int32(i), float64(i), float64(i)+0.5, 0, int64(i), b))
	}
	last := plain(uint32(MaxTopics + extra - 1))
	last.Topic = fmt.Sprintf("topic-%06d", MaxTopics+extra-1)
	d.Produce(ex(conn1, MaxTopics+extra, MaxTopics+extra, MaxTopics+extra+0.5, 0, MaxTopics+extra, last))
	d.Flush()
	st := d.Stats()
	if len(st.Topics) != MaxTopics+1 || st.TopicsOverflow != extra+1 {
		t.Fatalf("%d topics, overflow %d; want %d, %d", len(st.Topics), st.TopicsOverflow, MaxTopics+1, extra+1)
	}
	var batches, findings int64
	for _, tc := range st.Topics {
		batches += tc.Batches
		findings += tc.Findings
		if tc.Topic == OtherTopics && (tc.Batches != extra+1 || tc.Findings != 1) {
			t.Errorf("%s: %d batches, %d findings; want %d, 1", OtherTopics, tc.Batches, tc.Findings, extra+1)
		}
	}
	if batches != st.Batches || findings != st.Findings || st.Findings != 1 {
		t.Errorf("topics count %d batches and %d findings, the detector %d and %d", batches, findings, st.Batches, st.Findings)
	}
}

// TestRecordsHeldBound: the records kept for the batches remembered stay
// within maxRecordsHeld; the batches beyond it keep none, counted, and the
// room comes back as batches are forgotten.
func TestRecordsHeldBound(t *testing.T) {
	value := make([]byte, 256)
	recs := make([]decode.Record, 10)
	for i := range recs {
		recs[i] = decode.Record{OffsetDelta: int32(i), Key: value, Value: value, KeyLen: 256, ValueLen: 256}
	}
	per := recordsSize(recs)
	n := 2 * maxRecordsHeld / per
	d := New(Options{Window: time.Second})
	for i := range n {
		b := plain(uint32(i))
		b.Records = recs
		d.Produce(ex(conn1, int32(i), float64(i)/1000, float64(i)/1000+0.5, 0, int64(i), b))
		if d.recBudget.held > maxRecordsHeld {
			t.Fatalf("after %d batches: %d bytes of records held, bound %d", i+1, d.recBudget.held, maxRecordsHeld)
		}
	}
	if st := d.Stats(); st.RecordsNotKept < int64(n/2-1) {
		t.Errorf("%d batches' records not kept, want about %d", st.RecordsNotKept, n/2)
	}
	d.Produce(ex(conn1, int32(n), 3600_000, 3600_000.5, 0, int64(n), plain(uint32(n))))
	d.Flush()
	if d.recBudget.held != 0 {
		t.Errorf("%d bytes of records held once every batch was forgotten", d.recBudget.held)
	}
}
