package profile

import (
	"slices"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// epochBatch is an idempotent batch of producer 7 at epoch, sequence seq.
func epochBatch(epoch int16, seq int32, crc uint32) decode.Batch {
	b := idem(seq, crc)
	b.ProducerID, b.ProducerEpoch = 7, epoch
	return b
}

// recordFinding is a record-level finding of producer 7 (epoch 0) whose
// records the attempts carried, the later under epoch 1: librdkafka's
// drain and bump.
func recordFinding(v detect.Verdict, atts ...detect.Attempt) detect.Finding {
	f := detect.Finding{Kind: detect.KindRecordResend, ConnID: conn1.ID, Client: conn1.Client, Broker: conn1.Broker, ClientID: &rdkafka,
		Topic: "test", Partition: 0, ProducerID: 7, ProducerEpoch: 0, FirstSequence: -1, Idempotent: true, Match: detect.MatchRecords,
		Verdict: v, ProducerChange: detect.ProducerChangeEpoch, Attempts: atts}
	return f
}

// attempt is an attempt of corr on c at sentMs, of a batch of epoch.
func attempt(c *decode.ConnInfo, corr int32, sentMs float64, epoch int16, resp *detect.Response) detect.Attempt {
	return detect.Attempt{ConnID: c.ID, Client: c.Client, Broker: c.Broker, CorrelationID: corr, Time: ms(sentMs), Response: resp,
		Batch: &detect.AttemptBatch{ProducerID: 7, ProducerEpoch: epoch, BaseSequence: 0, NumRecords: 1}}
}

// TestRenumbered: a record-level finding of records sent again under a new
// epoch is tallied as such (Renumbered, Changes with what the re-send
// followed), its errored first attempt counts as retried, once however
// many findings show it, so that Unretried counts only the batches no
// finding shows sent again; and the diagnosis says the log holds records
// twice, never that idempotence made the re-sends harmless.
func TestRenumbered(t *testing.T) {
	rto := &detect.Response{Time: ms(30), ErrorCode: 7, Error: "REQUEST_TIMED_OUT", BaseOffset: 0}
	xs := []*decode.Exchange{
		ex(conn1, 1, 0, 30, 7, 0, epochBatch(0, 0, 0x1)),    // appended, answered REQUEST_TIMED_OUT
		ex(conn1, 2, 1, 31, 7, 1, epochBatch(0, 1, 0x2)),    // the same, never sent again
		ex(conn2, 1, 100, 102, 0, 5, epochBatch(1, 0, 0x3)), // corr 1's records under epoch 1
	}
	resend := attempt(conn2, 1, 100, 1, &detect.Response{Time: ms(102), BaseOffset: 5})
	resend.Cause, resend.CauseError, resend.GapMillis = detect.CauseBrokerError, "REQUEST_TIMED_OUT", 100
	first := attempt(conn1, 1, 0, 0, rto)
	f := recordFinding(detect.Duplicated, first, resend)
	// A second finding of the same first attempt (its records re-batched
	// into two batches): the errored send is still one.
	g := f
	g.ID = 2

	tests := []struct {
		name          string
		findings      []detect.Finding
		wantUnretried int64
		wantChanges   int64
	}{
		{"no finding: both unretried", nil, 2, 0},
		{"one finding", []detect.Finding{f}, 1, 1},
		{"two findings of one send", []detect.Finding{f, g}, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := New(Options{})
			for _, x := range xs {
				pr.Produce(x)
			}
			for i := range tt.findings {
				pr.Finding(&tt.findings[i])
			}
			var p *Producer
			ps := pr.Producers()
			for i := range ps {
				if ps[i].ProducerID == 7 {
					p = &ps[i]
				}
			}
			if p == nil {
				t.Fatalf("no profile of producer 7: %+v", ps)
			}
			var unretried int64
			for _, u := range p.Unretried {
				unretried += u.Count
			}
			if unretried != tt.wantUnretried {
				t.Errorf("unretried %+v, want %d", p.Unretried, tt.wantUnretried)
			}
			if p.Renumbered != tt.wantChanges {
				t.Errorf("renumbered %d, want %d", p.Renumbered, tt.wantChanges)
			}
			if tt.wantChanges == 0 {
				return
			}
			want := ChangeCount{Change: detect.ProducerChangeEpoch, ProducerID: 7, ToProducerID: 7, Epoch: 0, ToEpoch: 1,
				Cause: detect.CauseBrokerError, Error: "REQUEST_TIMED_OUT", Count: tt.wantChanges, Duplicated: tt.wantChanges}
			if len(p.Changes) != 1 || p.Changes[0] != want {
				t.Errorf("changes %+v, want %+v", p.Changes, want)
			}
			if !strings.Contains(p.Diagnosis, "Idempotence is on, yet the log holds records twice: the producer sent the records of") ||
				!strings.Contains(p.Diagnosis, "again under a new epoch (epoch 0 -> 1 of producer ID 7) after REQUEST_TIMED_OUT") ||
				strings.Contains(p.Diagnosis, "harmless") {
				t.Errorf("diagnosis: %s", p.Diagnosis)
			}
			if strings.Count(p.Diagnosis, "1 batch answered REQUEST_TIMED_OUT was never sent again") != 1 {
				t.Errorf("diagnosis lacks the one unretried batch: %s", p.Diagnosis)
			}
		})
	}
}

// TestCauseEnds: a re-send after the attempt before's connection ended
// keeps the times of that end: from the request (from the answer, for an
// answer lost) to the end, and from the end to the re-send.
func TestCauseEnds(t *testing.T) {
	end := func(by decode.EndSide, how decode.EndHow, atMs float64) *decode.ConnEnd {
		return &decode.ConnEnd{By: by, How: how, Time: ms(atMs)}
	}
	tests := []struct {
		name       string
		cause      detect.Cause
		prevResp   *detect.Response
		end        *decode.ConnEnd
		want       CauseCount
		wantPhrase string
	}{
		{
			name:  "broker RST 150 ms after the request, re-sent 100 ms later",
			cause: detect.CauseConnectionClosed, end: end(decode.EndByBroker, decode.EndRST, 150),
			want: CauseCount{Cause: detect.CauseConnectionClosed, Error: "broker RST", Count: 1, MinGapMillis: 250, MaxGapMillis: 250,
				Ended: 1, MinEndMillis: 150, MaxEndMillis: 150, MinAfterEndMillis: 100, MaxAfterEndMillis: 100},
			wantPhrase: "it reset the connection (broker RST) 150 ms after the request with no answer captured, and the client re-sent 100 ms after that (250 ms after the attempt before): not the client's timeout",
		},
		{
			name:  "answer lost: reset 4 ms after the answer",
			cause: detect.CauseAnswerLost, prevResp: &detect.Response{Time: ms(10)}, end: end(decode.EndByBroker, decode.EndRST, 14),
			want: CauseCount{Cause: detect.CauseAnswerLost, Error: "broker RST", Count: 1, MinGapMillis: 250, MaxGapMillis: 250,
				Ended: 1, MinEndMillis: 4, MaxEndMillis: 4, MinAfterEndMillis: 236, MaxAfterEndMillis: 236},
			wantPhrase: "1 re-send followed an answer the broker reset away 4 ms later (the client never read it).",
		},
		{
			name:       "no end captured",
			cause:      detect.CauseConnectionClosed,
			want:       CauseCount{Cause: detect.CauseConnectionClosed, Count: 1, MinGapMillis: 250, MaxGapMillis: 250},
			wantPhrase: "the capture shows no FIN or RST of it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := detect.Attempt{ConnID: 1, Time: ms(0), Response: tt.prevResp, End: tt.end}
			a := detect.Attempt{ConnID: 2, Time: ms(250), Cause: tt.cause, GapMillis: 250}
			if tt.end != nil {
				a.CauseError = tt.end.String()
			}
			got := addCause(nil, &prev, &a)
			if len(got) != 1 || !nearCause(got[0], tt.want) {
				t.Fatalf("cause %+v, want %+v", got, tt.want)
			}
			// Merged with itself: counts add, bounds stay.
			twice := mergeCause(slices.Clone(got), got[0])
			if twice[0].Count != 2 || (tt.end != nil && twice[0].Ended != 2) || twice[0].MinEndMillis != got[0].MinEndMillis {
				t.Errorf("merged %+v", twice[0])
			}
			p := &Producer{ProducerID: -1, Acks: []int16{-1}, Batches: 1, Resent: 1, Resends: 1,
				ByVerdict: map[detect.Verdict]int64{detect.Single: 1}, Causes: got}
			if d := Diagnose(p); !strings.Contains(d, tt.wantPhrase) {
				t.Errorf("diagnosis lacks %q:\n%s", tt.wantPhrase, d)
			}
		})
	}
}

// nearCause compares causes with their times to the microsecond.
func nearCause(a, b CauseCount) bool {
	r := func(v float64) int64 { return int64(v*1000 + 0.5) }
	return a.Cause == b.Cause && a.Error == b.Error && a.Count == b.Count && a.Ended == b.Ended &&
		r(a.MinGapMillis) == r(b.MinGapMillis) && r(a.MaxGapMillis) == r(b.MaxGapMillis) &&
		r(a.MinEndMillis) == r(b.MinEndMillis) && r(a.MaxEndMillis) == r(b.MaxEndMillis) &&
		r(a.MinAfterEndMillis) == r(b.MinAfterEndMillis) && r(a.MaxAfterEndMillis) == r(b.MaxAfterEndMillis)
}
