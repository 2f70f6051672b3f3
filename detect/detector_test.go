package detect

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

type wantAttempt struct {
	corr       int32
	cause      Cause
	causeError string
	gapMs      float64
	answered   bool
}

func TestVerdicts(t *testing.T) {
	tests := []struct {
		name      string
		feed      []*decode.Exchange // in completion order
		verdict   Verdict
		offsets   []int64
		match     Match
		reason    string
		attempts  []wantAttempt
		topic     string
		partition int32
	}{
		{
			name: "seed non-idempotent: timed out at 112, retry unanswered",
			feed: []*decode.Exchange{
				ex(conn1, 27, 0, 5000, 7, 112, plain(0xaabbccdd)),
				ex(conn1, 28, 5000.5, noAnswer, 0, 0, plain(0xaabbccdd)),
			},
			verdict: Unconfirmed, offsets: []int64{112}, match: MatchBytes,
			reason: "attempt 28 has no response in the capture; producer not idempotent: the log may hold the batch twice",
			attempts: []wantAttempt{{27, "", "", 0, true},
				{28, CauseBrokerError, "REQUEST_TIMED_OUT", 5000.5, false}},
		},
		{
			name: "seed idempotent: timed out at 204, retry answered 204",
			feed: []*decode.Exchange{
				ex(conn1, 6, 0, 30000, 7, 204, idem(1, 0x11)),
				ex(conn1, 7, 30001, 30002, 0, 204, idem(1, 0x11)),
			},
			verdict: Deduplicated, offsets: []int64{204}, match: MatchBytes,
			reason: "attempt 7 was answered with no error at offset 204, where attempt 6 was appended: the broker deduplicated the resend of the same sequence",
			attempts: []wantAttempt{{6, "", "", 0, true},
				{7, CauseBrokerError, "REQUEST_TIMED_OUT", 30001, true}},
		},
		{
			name: "duplicated: timed out at 10, retry appended at 11",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 100, 7, 10, plain(1)),
				ex(conn1, 2, 150, 160, 0, 11, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{10, 11}, match: MatchBytes,
			reason: "attempts 1 and 2 were appended at offsets 10 and 11: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 150, true}},
		},
		{
			name: "duplicated: NOT_ENOUGH_REPLICAS_AFTER_APPEND carries an append",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 100, 20, 10, plain(1)),
				ex(conn1, 2, 150, 160, 0, 12, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{10, 12}, match: MatchBytes,
			reason: "attempts 1 and 2 were appended at offsets 10 and 12: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 150, true}},
		},
		{
			name: "single: first rejected NOT_LEADER_OR_FOLLOWER",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 2, 6, -1, plain(1)),
				ex(conn1, 2, 100, 102, 0, 5, plain(1)),
			},
			verdict: Single, offsets: []int64{5}, match: MatchBytes,
			reason: "only attempt 2 was appended (offset 5); attempt 1 was rejected with NOT_LEADER_OR_FOLLOWER: the log holds the batch once",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "NOT_LEADER_OR_FOLLOWER", 100, true}},
		},
		{
			name: "client timeout, unanswered first attempt completes after its retry",
			feed: []*decode.Exchange{
				ex(conn1, 2, 1000, 1001, 0, 7, plain(1)),
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, plain(1)), decode.NoResponseLaterSeen),
			},
			verdict: Unconfirmed, offsets: []int64{7}, match: MatchBytes,
			reason: "attempt 1 has no response in the capture; producer not idempotent: the log may hold the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, false},
				{2, CauseClientTimeout, "", 1000, true}},
		},
		{
			name: "client timeout, first answer came after the retry was sent",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 1500, 0, 3, plain(1)),
				ex(conn1, 2, 1000, 1600, 0, 4, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{3, 4}, match: MatchBytes,
			reason: "attempts 1 and 2 were appended at offsets 3 and 4: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseClientTimeout, "", 1000, true}},
		},
		{
			name: "not a retry: same bytes sent again after success",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 0, 3, plain(1)),
				ex(conn1, 2, 100, 110, 0, 4, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{3, 4}, match: MatchBytes,
			reason: "attempts 1 and 2 were appended at offsets 3 and 4: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseNotARetry, "", 100, true}},
		},
		{
			name: "match by sequence: idempotent batch rebuilt with new bytes",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 100, 7, 20, idem(5, 0x1111)),
				ex(conn1, 2, 101, 110, 0, 20, idem(5, 0x2222)),
			},
			verdict: Deduplicated, offsets: []int64{20}, match: MatchSequence,
			reason: "attempt 2 was answered with no error at offset 20, where attempt 1 was appended: the broker deduplicated the resend of the same sequence",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 101, true}},
		},
		{
			name: "deduplicated: DUPLICATE_SEQUENCE_NUMBER",
			feed: []*decode.Exchange{
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, idem(5, 1)), decode.NoResponseLaterSeen),
				ex(conn1, 2, 500, 510, 46, -1, idem(5, 1)),
			},
			verdict: Deduplicated, offsets: []int64{}, match: MatchBytes,
			reason: "attempt 2 was answered DUPLICATE_SEQUENCE_NUMBER: the broker already held this sequence and did not append it again",
			attempts: []wantAttempt{{1, "", "", 0, false},
				{2, CauseClientTimeout, "", 500, true}},
		},
		{
			name: "unconfirmed idempotent: first unanswered, retry answered",
			feed: []*decode.Exchange{
				ex(conn1, 2, 500, 510, 0, 4, idem(5, 1)),
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, idem(5, 1)), decode.NoResponseClosed),
			},
			verdict: Unconfirmed, offsets: []int64{4}, match: MatchBytes,
			reason: "attempt 1 has no response in the capture; idempotent producer: the broker deduplicates a resend of the same sequence",
			attempts: []wantAttempt{{1, "", "", 0, false},
				{2, CauseClientTimeout, "", 500, true}},
		},
		{
			name: "unconfirmed: REQUEST_TIMED_OUT without an offset",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 100, 7, -1, plain(1)),
				ex(conn1, 2, 101, 110, 0, 9, plain(1)),
			},
			verdict: Unconfirmed, offsets: []int64{9}, match: MatchBytes,
			reason: "attempt 1 was answered REQUEST_TIMED_OUT without a base offset; producer not idempotent: the log may hold the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 101, true}},
		},
		{
			name: "rejected: every attempt rejected",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 1, 6, -1, plain(1)),
				ex(conn1, 2, 10, 11, 9999, -1, plain(1)),
			},
			verdict: Rejected, offsets: []int64{}, match: MatchBytes,
			reason: "every attempt was rejected (1: NOT_LEADER_OR_FOLLOWER, 2: UNKNOWN_ERROR_9999): the log does not hold the batch",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "NOT_LEADER_OR_FOLLOWER", 10, true}},
		},
		{
			name: "unconfirmed: rejected then unanswered holds at most once",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 1, 6, -1, plain(1)),
				ex(conn1, 2, 10, noAnswer, 0, 0, plain(1)),
			},
			verdict: Unconfirmed, offsets: []int64{}, match: MatchBytes,
			reason: "attempt 2 has no response in the capture; the log holds the batch at most once",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "NOT_LEADER_OR_FOLLOWER", 10, false}},
		},
		{
			name: "unknown error code as cause",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 1, 9999, -1, plain(1)),
				ex(conn1, 2, 10, 11, 0, 3, plain(1)),
			},
			verdict: Single, offsets: []int64{3}, match: MatchBytes,
			reason: "only attempt 2 was appended (offset 3); attempt 1 was rejected with UNKNOWN_ERROR_9999: the log holds the batch once",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "UNKNOWN_ERROR_9999", 10, true}},
		},
		{
			name: "sent three times",
			feed: []*decode.Exchange{
				ex(conn1, 2, 1000, 1500, 7, 50, plain(1)),
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, plain(1)), decode.NoResponseLaterSeen),
				ex(conn1, 3, 2000, 2010, 0, 51, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{50, 51}, match: MatchBytes,
			reason: "attempts 2 and 3 were appended at offsets 50 and 51: the log holds the batch at least twice (attempt 1 has no response in the capture)",
			attempts: []wantAttempt{{1, "", "", 0, false},
				{2, CauseClientTimeout, "", 1000, true},
				{3, CauseBrokerError, "REQUEST_TIMED_OUT", 1000, true}},
		},
		{
			name: "three appends at three offsets",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 7, 50, plain(1)),
				ex(conn1, 2, 20, 30, 7, 60, plain(1)),
				ex(conn1, 3, 40, 50, 0, 70, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{50, 60, 70}, match: MatchBytes,
			reason: "attempts 1, 2 and 3 were appended at offsets 50, 60 and 70: the log holds the batch 3 times",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 20, true},
				{3, CauseBrokerError, "REQUEST_TIMED_OUT", 20, true}},
		},
		{
			name: "same send time: correlation ID breaks the tie",
			feed: []*decode.Exchange{
				ex(conn1, 9, 0, noAnswer, 0, 0, plain(1)),
				ex(conn1, 8, 0, noAnswer, 0, 0, plain(1)),
			},
			verdict: Unconfirmed, offsets: []int64{}, match: MatchBytes,
			reason: "attempts 8 and 9 have no response in the capture; producer not idempotent: the log may hold the batch twice",
			attempts: []wantAttempt{{8, "", "", 0, false},
				{9, CauseClientTimeout, "", 0, false}},
		},
		{
			name: "acks=0 sent twice: no client retries an unanswerable request",
			feed: []*decode.Exchange{
				acks0(ex(conn1, 1, 0, noAnswer, 0, 0, plain(1))),
				acks0(ex(conn1, 2, 100, noAnswer, 0, 0, plain(1))),
			},
			verdict: Unconfirmed, offsets: []int64{}, match: MatchBytes,
			reason: "attempts 1 and 2 were sent with acks=0, which the broker never answers; producer not idempotent: the log may hold the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, false},
				{2, CauseNotARetry, "", 100, false}},
		},
		{
			name: "answer captured at the instant the retry was sent: it did not cause it",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 1000, 7, 10, plain(1)),
				ex(conn1, 2, 1000, 1010, 0, 11, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{10, 11}, match: MatchBytes,
			reason: "attempts 1 and 2 were appended at offsets 10 and 11: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseClientTimeout, "", 1000, true}},
		},
		{
			name: "idempotent: resend answered REQUEST_TIMED_OUT at the original offset",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 0, 20, idem(5, 1)),
				ex(conn1, 2, 100, 200, 7, 20, idem(5, 1)),
			},
			verdict: Deduplicated, offsets: []int64{20}, match: MatchBytes,
			reason: "attempt 2 was answered REQUEST_TIMED_OUT at offset 20, where attempt 1 was appended: the broker deduplicated the resend of the same sequence",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseNotARetry, "", 100, true}},
		},
		{
			name: "idempotent: both answered REQUEST_TIMED_OUT at one offset",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 7, 20, idem(5, 1)),
				ex(conn1, 2, 100, 200, 7, 20, idem(5, 1)),
			},
			verdict: Deduplicated, offsets: []int64{20}, match: MatchBytes,
			reason: "attempt 2 was answered REQUEST_TIMED_OUT at offset 20, where attempt 1 was appended: the broker deduplicated the resend of the same sequence",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 100, true}},
		},
		{
			name: "duplicated, and an unanswered attempt may add a copy",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 7, 50, plain(1)),
				noResp(ex(conn1, 2, 20, noAnswer, 0, 0, plain(1)), decode.NoResponseLaterSeen),
				ex(conn1, 3, 40, 50, 0, 51, plain(1)),
			},
			verdict: Duplicated, offsets: []int64{50, 51}, match: MatchBytes,
			reason: "attempts 1 and 3 were appended at offsets 50 and 51: the log holds the batch at least twice (attempt 2 has no response in the capture)",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 20, false},
				{3, CauseClientTimeout, "", 20, true}},
		},
		{
			name: "resend after DUPLICATE_SEQUENCE_NUMBER, which clients take as success",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 46, -1, idem(5, 1)),
				ex(conn1, 2, 100, 110, 0, 20, idem(5, 1)),
			},
			verdict: Deduplicated, offsets: []int64{20}, match: MatchBytes,
			reason: "attempt 1 was answered DUPLICATE_SEQUENCE_NUMBER: the broker already held this sequence and did not append it again",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseNotARetry, "", 100, true}},
		},
		{
			name: "OUT_OF_ORDER_SEQUENCE_NUMBER after an append: single",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 7, 20, idem(5, 1)),
				ex(conn1, 2, 100, 110, 45, -1, idem(5, 1)),
			},
			verdict: Single, offsets: []int64{20}, match: MatchBytes,
			reason: "only attempt 1 was appended (offset 20); attempt 2 was rejected with OUT_OF_ORDER_SEQUENCE_NUMBER: the log holds the batch once",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 100, true}},
		},
		{
			name: "legacy message set (magic 1) sent twice",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 10, 7, 30, legacy(plain(0xabc))),
				ex(conn1, 2, 100, 110, 0, 31, legacy(plain(0xabc))),
			},
			verdict: Duplicated, offsets: []int64{30, 31}, match: MatchBytes,
			reason: "attempts 1 and 2 were appended at offsets 30 and 31: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 100, true}},
		},
		{
			name: "topic by ID, never named",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 100, 7, 10, withID(plain(1), "")),
				ex(conn1, 2, 150, 160, 0, 11, withID(plain(1), "")),
			},
			verdict: Duplicated, offsets: []int64{10, 11}, match: MatchBytes, topic: "-",
			reason: "attempts 1 and 2 were appended at offsets 10 and 11: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 150, true}},
		},
		{
			name: "topic by ID, named by a later Metadata",
			feed: []*decode.Exchange{
				ex(conn1, 1, 0, 100, 7, 10, withID(plain(1), "")),
				ex(conn1, 2, 150, 160, 0, 11, withID(plain(1), "orders")),
			},
			verdict: Duplicated, offsets: []int64{10, 11}, match: MatchBytes, topic: "orders",
			reason: "attempts 1 and 2 were appended at offsets 10 and 11: the log holds the batch twice",
			attempts: []wantAttempt{{1, "", "", 0, true},
				{2, CauseBrokerError, "REQUEST_TIMED_OUT", 150, true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var emitted []Finding
			d := New(Options{OnFinding: func(f Finding) { emitted = append(emitted, f) }})
			for _, x := range tt.feed {
				d.Produce(x)
			}
			got := d.Flush()
			if len(got) != 1 {
				t.Fatalf("got %d findings, want 1: %+v", len(got), got)
			}
			if !reflect.DeepEqual(emitted, got) {
				t.Errorf("OnFinding got %+v, Flush %+v", emitted, got)
			}
			f := got[0]
			if f.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (reason %q)", f.Verdict, tt.verdict, f.Reason)
			}
			if !reflect.DeepEqual(f.AppendedOffsets, tt.offsets) {
				t.Errorf("appended offsets %v, want %v", f.AppendedOffsets, tt.offsets)
			}
			if f.Match != tt.match {
				t.Errorf("match %q, want %q", f.Match, tt.match)
			}
			if f.Reason != tt.reason {
				t.Errorf("reason\n got %q\nwant %q", f.Reason, tt.reason)
			}
			wantTopic := tt.topic
			switch wantTopic {
			case "":
				wantTopic = "test"
			case "-":
				wantTopic = "" // named by ID only
			}
			if f.Topic != wantTopic || f.Partition != tt.partition {
				t.Errorf("topic %q/%d, want %q/%d", f.Topic, f.Partition, wantTopic, tt.partition)
			}
			if len(f.Attempts) != len(tt.attempts) {
				t.Fatalf("%d attempts, want %d", len(f.Attempts), len(tt.attempts))
			}
			for i, w := range tt.attempts {
				a := f.Attempts[i]
				if a.CorrelationID != w.corr || a.Cause != w.cause || a.CauseError != w.causeError ||
					a.GapMillis != w.gapMs || (a.Response != nil) != w.answered {
					t.Errorf("attempt %d = {corr %d cause %q %q gap %v answered %v}, want %+v",
						i, a.CorrelationID, a.Cause, a.CauseError, a.GapMillis, a.Response != nil, w)
				}
				if a.Response == nil && a.NoResponse == "" {
					t.Errorf("attempt %d: no response and no reason", i)
				}
				if i > 0 && a.Time.Before(f.Attempts[i-1].Time) {
					t.Errorf("attempt %d sent before attempt %d", i, i-1)
				}
			}
		})
	}
}

// legacy makes b a magic 1 message set, as decode gives one.
func legacy(b decode.Batch) decode.Batch {
	b.Magic = 1
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	return b
}

func withID(b decode.Batch, name string) decode.Batch {
	b.Topic = name
	b.TopicID = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	return b
}

func TestFindingFields(t *testing.T) {
	d := New(Options{})
	b1 := idem(1, 0x1111)
	b1.ProducerEpoch = 3
	b1.ProducerID = 42
	b2 := b1
	b2.CRC, b2.Hash = 0x2222, 99
	d.Produce(ex(conn1, 6, 0, 30000, 7, 204, b1))
	d.Produce(ex(conn1, 7, 30001, 30003.5, 0, 204, b2))
	got := d.Flush()
	if len(got) != 1 {
		t.Fatalf("got %d findings", len(got))
	}
	f := got[0]
	if f.ConnID != 1 || f.Client != conn1.Client || f.Broker != conn1.Broker || f.ClientID == nil || *f.ClientID != "rdkafka" ||
		f.ProducerID != 42 || f.ProducerEpoch != 3 || f.FirstSequence != 1 || f.NumRecords != 1 ||
		f.BatchCRC != 0x1111 || f.Magic != 2 || !f.Idempotent || f.Match != MatchSequence {
		t.Errorf("finding fields: %+v", f)
	}
	a := f.Attempts[1]
	if a.Version != 7 || a.Acks != -1 || a.TimeoutMillis != 5000 || !a.Time.Equal(ms(30001)) {
		t.Errorf("attempt fields: %+v", a)
	}
	r := a.Response
	if r == nil || r.Error != "NONE" || r.ErrorCode != 0 || r.BaseOffset != 204 || r.LogAppendTime != -1 ||
		r.LatencyMillis != 2.5 || !r.Time.Equal(ms(30003.5)) {
		t.Errorf("response: %+v", r)
	}
	if e := f.Attempts[0].Response.Error; e != "REQUEST_TIMED_OUT" {
		t.Errorf("first response error %q", e)
	}
}

func TestNotGrouped(t *testing.T) {
	b := plain(1)
	other := plain(2)
	otherEpoch := idem(1, 5)
	otherEpoch.ProducerEpoch = 1
	otherTopic := plain(1)
	otherTopic.Topic = "other"
	tests := []struct {
		name  string
		feed  []*decode.Exchange
		scope Scope
	}{
		{"different connections, connection scope", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b), ex(conn2, 1, 20, 30, 0, 2, b)}, ScopeConnection},
		{"one connection, client scope", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b), ex(conn1, 2, 20, 30, 0, 2, b)}, ScopeClient},
		{"different partitions", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b), ex(conn1, 2, 20, 30, 0, 2, part(b, 1))}, ""},
		{"different topics", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b), ex(conn1, 2, 20, 30, 0, 2, otherTopic)}, ""},
		{"non-idempotent, different bytes", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b), ex(conn1, 2, 20, 30, 0, 2, other)}, ""},
		{"idempotent, different epoch", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, idem(1, 5)), ex(conn1, 2, 20, 30, 0, 2, otherEpoch)}, ""},
		{"idempotent, next sequence", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, idem(1, 5)), ex(conn1, 2, 20, 30, 0, 2, idem(2, 6))}, ""},
		{"one request, two partitions", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b, part(b, 1))}, ""},
		{"one request, the same batch twice in one partition", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, b, b)}, ""},
		{"one request, an idempotent batch twice in one partition", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 0, 1, idem(1, 5), idem(1, 5))}, ""},
		{"resent into another partition", []*decode.Exchange{
			ex(conn1, 1, 0, 10, 7, 1, b), ex(conn1, 2, 20, 30, 0, 2, part(b, 1))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{Scope: tt.scope})
			for _, x := range tt.feed {
				d.Produce(x)
			}
			if got := d.Flush(); len(got) != 0 {
				t.Errorf("got %d findings, want none: %+v", len(got), got)
			}
			// ScopeClient still groups (and counts) a resend on one
			// connection; it only does not report it.
			if s := d.Stats(); (s.Resends != 0 && tt.scope != ScopeClient) || s.Findings != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	var emitted []Finding
	d := New(Options{Window: time.Minute, OnFinding: func(f Finding) { emitted = append(emitted, f) }})
	d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(1)))  // batch 1, sent twice
	d.Produce(ex(conn1, 2, 20, 30, 0, 6, plain(1))) //
	d.Produce(ex(conn1, 3, 40, 50, 0, 7, plain(2))) // batch 2, once for now
	if len(emitted) != 0 {
		t.Fatalf("emitted %d findings before the window passed", len(emitted))
	}
	// A minute and more later: both batches are forgotten, batch 1 decided.
	d.Produce(ex(conn1, 4, 61000, 61010, 0, 8, plain(3)))
	if len(emitted) != 1 || emitted[0].Verdict != Duplicated {
		t.Fatalf("after the window: emitted %+v", emitted)
	}
	// A resend of batch 2 now is no longer grouped with its first send.
	d.Produce(ex(conn1, 5, 61020, 61030, 0, 9, plain(2)))
	got := d.Flush()
	if len(got) != 1 || len(emitted) != 1 {
		t.Errorf("Flush gave %d findings, emitted %d; want 1, 1", len(got), len(emitted))
	}
	s := d.Stats()
	if s.Expired != 2 || s.Evicted != 0 || s.Resends != 1 {
		t.Errorf("stats: expired %d evicted %d resends %d, want 2 0 1", s.Expired, s.Evicted, s.Resends)
	}
}

func TestWindowKeepsTouchedBatch(t *testing.T) {
	// A batch touched again is remembered a window after its last attempt.
	d := New(Options{Window: time.Minute})
	d.Produce(ex(conn1, 1, 0, 10, 7, 5, plain(1)))
	d.Produce(ex(conn1, 2, 50000, 50010, 7, 6, plain(1)))
	d.Produce(ex(conn1, 3, 70000, 70010, 0, 7, plain(9))) // 70 s after the first
	d.Produce(ex(conn1, 4, 100000, 100010, 0, 8, plain(1)))
	got := d.Flush()
	if len(got) != 1 || len(got[0].Attempts) != 3 {
		t.Fatalf("got %+v, want one finding of 3 attempts", got)
	}
}

func TestMaxBatches(t *testing.T) {
	d := New(Options{MaxBatches: 2})
	d.Produce(ex(conn1, 1, 0, 1, 0, 1, plain(1)))
	d.Produce(ex(conn1, 2, 10, 11, 0, 2, plain(2)))
	d.Produce(ex(conn1, 3, 20, 21, 0, 3, plain(3))) // evicts batch 1
	d.Produce(ex(conn1, 4, 30, 31, 0, 4, plain(1))) // evicts batch 2
	d.Produce(ex(conn1, 5, 40, 41, 0, 5, plain(3))) // grouped with 3
	got := d.Flush()
	if len(got) != 1 || got[0].Attempts[0].CorrelationID != 3 {
		t.Fatalf("got %+v, want the finding of batch 3", got)
	}
	if s := d.Stats(); s.Evicted != 2 {
		t.Errorf("evicted %d, want 2", s.Evicted)
	}
}

func TestFlushOrderAndStats(t *testing.T) {
	var emitted []int32
	d := New(Options{OnFinding: func(f Finding) { emitted = append(emitted, f.Attempts[0].CorrelationID) }})
	// Three findings, fed out of order: conn2 at t=0, conn1 at t=0, conn1 at t=-5ms.
	d.Produce(ex(conn2, 10, 0, 1, 0, 1, plain(1)))
	d.Produce(ex(conn2, 11, 5, 6, 0, 2, plain(1)))
	d.Produce(ex(conn1, 20, 0, 1, 7, 1, part(plain(1), 3)))
	d.Produce(ex(conn1, 21, 5, 6, 0, 2, part(plain(1), 3)))
	d.Produce(ex(conn1, 30, -5, 1, 7, 9, idem(1, 7), part(plain(4), 1)))
	d.Produce(ex(conn1, 31, 5, 6, 0, 9, idem(1, 7)))
	d.Produce(&decode.Exchange{}) // no connection, no batch: counted, harmless
	d.Produce(nil)
	got := d.Flush()
	var order []int32
	for _, f := range got {
		order = append(order, f.Attempts[0].CorrelationID)
	}
	if want := []int32{30, 20, 10}; !reflect.DeepEqual(order, want) || !reflect.DeepEqual(emitted, want) {
		t.Errorf("order %v, emitted %v, want %v", order, emitted, want)
	}
	s := d.Stats()
	want := Stats{
		Exchanges: 7, Batches: 7, Records: 52, Resends: 3, Findings: 3,
		ByVerdict: map[Verdict]int64{Duplicated: 2, Deduplicated: 1},
		Topics:    []TopicStats{{Topic: "test", Batches: 7, Records: 52, Findings: 3, Duplicated: 2}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("stats\n got %+v\nwant %+v", s, want)
	}
	// Flush again: the same findings, nothing new.
	if again := d.Flush(); !reflect.DeepEqual(again, got) || len(emitted) != 3 {
		t.Errorf("second Flush changed the findings or emitted again")
	}
}

// TestFedAfterFlush checks that a Flush, which empties the batch indexes
// whole, leaves none of their entries behind: the same batches sent again
// after it are new batches, matched only with each other. And that the
// findings a Flush returned are the caller's: the next Flush, sorting the
// run's findings with the new ones (sent earlier here, so that they sort
// first), leaves them alone, whether the new ones fit in the room left
// after them or not.
func TestFedAfterFlush(t *testing.T) {
	for _, again := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d sent again", again), func(t *testing.T) {
			d := New(Options{})
			pairs := []func(corr int32, at float64){
				func(corr int32, at float64) {
					d.Produce(ex(conn1, corr, at, at+1, 7, 1, plain(1)))
					d.Produce(ex(conn1, corr+1, at+5, at+6, 0, 2, plain(1)))
				},
				func(corr int32, at float64) {
					d.Produce(ex(conn1, corr, at+10, at+11, 0, 3, idem(1, 7)))
					d.Produce(ex(conn1, corr+1, at+15, at+16, 0, 3, idem(1, 7)))
				},
				func(corr int32, at float64) {
					d.Produce(ex(conn1, corr, at+20, at+21, 7, 4, plain(3)))
					d.Produce(ex(conn1, corr+1, at+25, at+26, 0, 5, plain(3)))
				},
			}
			for i, p := range pairs {
				p(10+2*int32(i), 1000)
			}
			first := d.Flush()
			if len(first) != 3 {
				t.Fatalf("first round: %d findings, want 3", len(first))
			}
			kept := slices.Clone(first)
			for i, p := range pairs[:again] {
				p(20+2*int32(i), 0)
			}
			got := d.Flush()
			if !reflect.DeepEqual(first, kept) {
				t.Errorf("the second Flush changed the findings the first returned")
			}
			if len(got) != 3+again {
				t.Fatalf("%d findings in all, want %d", len(got), 3+again)
			}
			for _, f := range got {
				if len(f.Attempts) != 2 || (f.Attempts[0].CorrelationID < 20) != (f.Attempts[1].CorrelationID < 20) {
					t.Errorf("finding with attempts %+v: a batch of one round matched with one of the other", f.Attempts)
				}
			}
		})
	}
}

func TestTopicIDStats(t *testing.T) {
	d := New(Options{})
	d.Produce(ex(conn1, 1, 0, 1, 0, 1, withID(plain(1), "")))
	d.Produce(ex(conn1, 2, 5, 6, 0, 2, withID(plain(2), "orders")))
	s := d.Stats()
	if len(s.Topics) != 1 || s.Topics[0].Topic != "orders" || s.Topics[0].Batches != 2 {
		t.Errorf("topics %+v", s.Topics)
	}
	d = New(Options{})
	d.Produce(ex(conn1, 1, 0, 1, 0, 1, withID(plain(1), "")))
	if got := d.Stats().Topics[0].Topic; got != "deadbeef-0102-0304-0506-0708090a0b0c" {
		t.Errorf("unnamed topic %q", got)
	}
}

// TestRequestOfSeveralPartitions: a request carrying batches for several
// partitions, each re-sent in the next request, gives one finding per
// partition, each with both attempts and its own answers.
func TestRequestOfSeveralPartitions(t *testing.T) {
	d := New(Options{})
	x1 := ex(conn1, 1, 0, 10, 7, 5, plain(1), part(plain(2), 1), part(plain(3), 2))
	x1.Batches[1].Response.ErrorCode, x1.Batches[1].Response.BaseOffset = 6, -1 // partition 1: not leader
	x2 := ex(conn1, 2, 100, 110, 0, 6, plain(1), part(plain(2), 1), part(plain(3), 2))
	d.Produce(x1)
	d.Produce(x2)
	got := d.Flush()
	want := []struct {
		partition int32
		verdict   Verdict
		cause     string
	}{{0, Duplicated, "REQUEST_TIMED_OUT"}, {1, Single, "NOT_LEADER_OR_FOLLOWER"}, {2, Duplicated, "REQUEST_TIMED_OUT"}}
	if len(got) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		f := got[i]
		if f.Partition != w.partition || f.Verdict != w.verdict || len(f.Attempts) != 2 ||
			f.Attempts[0].CorrelationID != 1 || f.Attempts[1].CorrelationID != 2 || f.Attempts[1].CauseError != w.cause {
			t.Errorf("finding %d: partition %d verdict %s attempts %+v, want %+v", i, f.Partition, f.Verdict, f.Attempts, w)
		}
	}
}

// TestPacketTimes: times come back as the capture gave them, the Unix epoch
// included (a capture writer that zeroes timestamps gives it).
func TestPacketTimes(t *testing.T) {
	for _, start := range []time.Time{time.Unix(0, 0), time.Unix(0, 1), time.Unix(-1, 0), t0} {
		t.Run(start.UTC().String(), func(t *testing.T) {
			d := New(Options{})
			x1 := ex(conn1, 1, 0, 10, 7, 5, plain(1))
			x2 := ex(conn1, 2, 100, noAnswer, 0, 0, plain(1))
			x1.RequestTime, x1.ResponseTime = start, start.Add(10*time.Millisecond)
			x2.RequestTime = start.Add(100 * time.Millisecond)
			d.Produce(x1)
			d.Produce(x2)
			got := d.Flush()
			if len(got) != 1 {
				t.Fatalf("%d findings", len(got))
			}
			a := got[0].Attempts
			if !a[0].Time.Equal(start) || !a[0].Response.Time.Equal(start.Add(10*time.Millisecond)) ||
				a[0].Response.LatencyMillis != 10 || a[1].GapMillis != 100 {
				t.Errorf("attempts %+v, response %+v", a, a[0].Response)
			}
		})
	}
}

// TestTopicStatsMerge: a topic written by name (Produce v9) on one
// connection and by a topic ID a Metadata response named (v13) on another is
// one topic in the counts.
func TestTopicStatsMerge(t *testing.T) {
	byName := plain(1)
	byName.Topic = "orders"
	tests := []struct {
		name string
		feed []*decode.Exchange
		want []TopicStats
	}{
		{"named ID and name", []*decode.Exchange{
			ex(conn1, 1, 0, 1, 0, 1, byName),
			ex(conn2, 1, 5, 6, 0, 2, withID(plain(2), "orders")),
		}, []TopicStats{{Topic: "orders", TopicID: withID(plain(1), "").TopicID, Batches: 2, Records: 20}}},
		{"unnamed ID stays apart", []*decode.Exchange{
			ex(conn1, 1, 0, 1, 0, 1, byName),
			ex(conn2, 1, 5, 6, 0, 2, withID(plain(2), "")),
		}, []TopicStats{
			{Topic: "deadbeef-0102-0304-0506-0708090a0b0c", TopicID: withID(plain(1), "").TopicID, Batches: 1, Records: 10},
			{Topic: "orders", Batches: 1, Records: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{})
			for _, x := range tt.feed {
				d.Produce(x)
			}
			if got := d.Stats().Topics; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("topics\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
