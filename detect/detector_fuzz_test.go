package detect

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/decode"
)

// exchangesFrom turns fuzz bytes into exchanges, 4 bytes each: which batch
// (of 4 non-idempotent and 4 idempotent, some rebuilt with other bytes), which
// connection of one client (bit 1: an unanswered exchange's connection
// closed), what answer, and when.
func exchangesFrom(data []byte) []*decode.Exchange {
	var xs []*decode.Exchange
	for i := 0; i+4 <= len(data) && len(xs) < 64; i += 4 {
		which, connSel, answer, when := data[i], data[i+1], data[i+2], data[i+3]
		var b decode.Batch
		if which&4 == 0 {
			b = plain(uint32(which & 3))
		} else {
			b = idem(int32(which&3), uint32(which&3)+uint32(which>>3&1)*100) // bit 3: rebuilt bytes
		}
		c := conn1
		if connSel&1 == 1 {
			c = conn2
		}
		sent := float64(i)*10 + float64(when%8)
		codes := []int16{0, 7, 20, 46, 6, 45}
		var x *decode.Exchange
		switch {
		case answer&7 == 7 && when&8 != 0 && b.ProducerID < 0:
			x = acks0(ex(c, int32(i/4), sent, noAnswer, 0, 0, b))
		case answer&7 == 7 && connSel&2 != 0:
			x = noResp(ex(c, int32(i/4), sent, noAnswer, 0, 0, b), decode.NoResponseClosed)
		case answer&7 == 7:
			x = ex(c, int32(i/4), sent, noAnswer, 0, 0, b)
		default:
			off := int64(answer>>3) - 2 // -2 .. 29
			x = ex(c, int32(i/4), sent, sent+float64(answer>>4)*7, codes[answer&7%6], off, b)
		}
		xs = append(xs, x)
	}
	return xs
}

// endsFrom turns the fuzz bytes after the last whole exchange into how
// conn1 and conn2 ended, a byte each: bit 0 the side (client or broker),
// bit 1 FIN or RST, the rest the time (in 40 ms steps, as exchanges go).
func endsFrom(data []byte) map[*decode.ConnInfo]decode.ConnEnd {
	ends := map[*decode.ConnInfo]decode.ConnEnd{}
	rest := data[len(data)-len(data)%4:]
	if len(data) > 64*4 {
		rest = nil
	}
	for i, b := range rest {
		if i > 1 {
			break
		}
		e := decode.ConnEnd{By: decode.EndByClient, How: decode.EndFIN, Time: ms(float64(b>>2) * 40)}
		if b&1 != 0 {
			e.By = decode.EndByBroker
		}
		if b&2 != 0 {
			e.How = decode.EndRST
		}
		ends[[]*decode.ConnInfo{conn1, conn2}[i]] = e
	}
	return ends
}

// FuzzOrder checks that findings do not depend on the order exchanges
// complete in, that every finding is well formed, and that a streaming detector's
// latest reports are the same findings (checkStreaming).
func FuzzOrder(f *testing.F) {
	f.Add([]byte{0, 0, 1<<3 | 1, 0, 0, 0, 7, 1})                       // seed a: error 7 then unanswered
	f.Add([]byte{4, 0, 30<<3 | 1, 0, 4, 0, 30 << 3, 0})                // seed b: idempotent, 7 then 0 at the same offset
	f.Add([]byte{12, 0, 5<<3 | 1, 0, 4, 0, 5 << 3, 0, 1, 1, 0, 3})     // rebuilt bytes, other connection
	f.Add([]byte{0, 2, 7, 0, 0, 1, 3 << 3, 1})                         // closed unanswered, resent on the other connection
	f.Add([]byte{0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 4 << 3, 0, 0, 1, 2, 0}) // three sends
	f.Add([]byte{1, 0, 7, 8, 1, 0, 7, 8})                              // acks=0 sent twice
	f.Add([]byte{0, 0, 2 << 3, 0, 0, 1, 3 << 3, 1, 1<<2 | 3})          // answered, then conn1's broker RST: answer_lost
	f.Add([]byte{0, 2, 7, 0, 0, 1, 3 << 3, 1, 1 << 2})                 // closed unanswered after the client's FIN
	f.Fuzz(func(t *testing.T, data []byte) {
		xs := exchangesFrom(data)
		ends := endsFrom(data)
		withEnds := func() *Detector {
			d := New(Options{})
			for _, c := range []*decode.ConnInfo{conn1, conn2} {
				if e, ok := ends[c]; ok {
					d.ConnEnd(c, e)
				}
			}
			return d
		}
		inOrder := withEnds()
		for _, x := range xs {
			inOrder.Produce(x)
		}
		want := inOrder.Flush()
		reversed := withEnds()
		for _, x := range slices.Backward(xs) {
			reversed.Produce(x)
		}
		if got := reversed.Flush(); !reflect.DeepEqual(got, want) {
			t.Fatalf("findings depend on completion order:\n in order %+v\n reversed %+v", want, got)
		}

		s := inOrder.Stats()
		var resends, byVerdict int64
		for _, n := range s.ByVerdict {
			byVerdict += n
		}
		for i, f := range want {
			resends += int64(len(f.Attempts) - 1)
			if len(f.Attempts) < 2 {
				t.Fatalf("finding %d has %d attempts", i, len(f.Attempts))
			}
			if i > 0 && compareFindings(want[i-1], f) > 0 {
				t.Fatalf("findings %d and %d out of order", i-1, i)
			}
			if f.AppendedOffsets == nil || !slices.IsSorted(f.AppendedOffsets) ||
				len(slices.Compact(slices.Clone(f.AppendedOffsets))) != len(f.AppendedOffsets) {
				t.Fatalf("finding %d appended offsets %v", i, f.AppendedOffsets)
			}
			if (f.Verdict == Duplicated) != (len(f.AppendedOffsets) >= 2) {
				t.Fatalf("finding %d: verdict %s with offsets %v", i, f.Verdict, f.AppendedOffsets)
			}
			if f.Verdict == Deduplicated && !f.Idempotent {
				t.Fatalf("finding %d deduplicated but not idempotent", i)
			}
			if f.Reason == "" {
				t.Fatalf("finding %d has no reason", i)
			}
			conns := map[uint64]bool{}
			for _, a := range f.Attempts {
				conns[a.ConnID] = true
			}
			if (f.Scope == ScopeClient) != (len(conns) > 1) || (f.Scope != ScopeClient && f.Scope != ScopeConnection) {
				t.Fatalf("finding %d: scope %q with attempts on %d connections", i, f.Scope, len(conns))
			}
			if a := f.Attempts[0]; a.ConnID != f.ConnID || a.Client != f.Client || a.Broker != f.Broker {
				t.Fatalf("finding %d on connection %d, its first attempt on %d", i, f.ConnID, a.ConnID)
			}
			for k, a := range f.Attempts {
				if (k == 0) != (a.Cause == "") || a.Cause == CauseBrokerError && a.CauseError == "" ||
					a.Cause == CauseNotARetry && a.CauseError != "" || a.Cause == CauseAnswerLost && a.CauseError != "broker RST" {
					t.Fatalf("finding %d attempt %d: cause %q %q", i, k, a.Cause, a.CauseError)
				}
				if e, ok := ends[conns2info(a.ConnID)]; a.End != nil && (!ok || *a.End != e) {
					t.Fatalf("finding %d attempt %d: end %+v, the connection's %+v", i, k, a.End, e)
				}
				if k > 0 && (a.Time.Before(f.Attempts[k-1].Time) || a.GapMillis < 0) {
					t.Fatalf("finding %d attempt %d out of send order", i, k)
				}
				if (a.Response == nil) == (a.NoResponse == "") {
					t.Fatalf("finding %d attempt %d: response %v no_response %q", i, k, a.Response, a.NoResponse)
				}
				if k == 0 {
					continue
				}
				prev := f.Attempts[k-1]
				switch {
				case prev.Acks == 0 && a.Cause != CauseNotARetry:
					t.Fatalf("finding %d attempt %d: cause %q after an acks=0 attempt", i, k, a.Cause)
				case a.Cause == CauseClientTimeout && prev.Acks != 0 && prev.Response != nil && prev.Response.Time.Before(a.Time):
					t.Fatalf("finding %d attempt %d: client_timeout, but attempt %d was answered before", i, k, k-1)
				case a.Cause == CauseConnectionClosed && (prev.Response != nil || prev.ConnID == a.ConnID):
					t.Fatalf("finding %d attempt %d: connection_closed after attempt %d on connection %d (%q)", i, k, k-1, prev.ConnID, prev.NoResponse)
				case a.Cause == CauseConnectionClosed && a.CauseError != "" && !strings.HasPrefix(a.CauseError, "broker "):
					t.Fatalf("finding %d attempt %d: connection_closed by %q", i, k, a.CauseError)
				case a.Cause == CauseAnswerLost && (prev.Response == nil || prev.ConnID == a.ConnID || prev.End == nil ||
					prev.End.By != decode.EndByBroker || prev.End.How != decode.EndRST || prev.End.Time.After(a.Time)):
					t.Fatalf("finding %d attempt %d: answer_lost after %+v", i, k, prev)
				case a.Cause != CauseClientTimeout && a.Cause != CauseConnectionClosed && prev.Acks != 0 && prev.NoResponse != "" && prev.NoResponse != NoResponsePartition:
					t.Fatalf("finding %d attempt %d: cause %q after an unanswered attempt", i, k, a.Cause)
				}
			}
		}
		if s.Findings != int64(len(want)) || byVerdict != s.Findings || s.Resends != resends || s.Exchanges != int64(len(xs)) {
			t.Fatalf("stats %+v for %d findings, %d resends", s, len(want), resends)
		}
		checkStreaming(t, xs)
		checkStreaming(t, slices.Collect(func(yield func(*decode.Exchange) bool) {
			for _, x := range slices.Backward(xs) {
				if !yield(x) {
					return
				}
			}
		}))
	})
}

// conns2info is the test connection of an ID.
func conns2info(id uint64) *decode.ConnInfo {
	if id == conn2.ID {
		return conn2
	}
	return conn1
}
