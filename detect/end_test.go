package detect

import (
	"testing"

	"github.com/kdupcap/kdupcap/decode"
)

// TestCauseFromConnEnd: the cause of a re-send on a new connection follows
// from who ended the old one, and an answer reset away at once is
// answer_lost; each case beside the one that must not be taken for it.
func TestCauseFromConnEnd(t *testing.T) {
	closed := func(x *decode.Exchange) *decode.Exchange { return noResp(x, decode.NoResponseClosed) }
	end := func(by decode.EndSide, how decode.EndHow, atMs float64) *decode.ConnEnd {
		return &decode.ConnEnd{By: by, How: how, Time: ms(atMs)}
	}
	tests := []struct {
		name      string
		first     *decode.Exchange
		end       *decode.ConnEnd // of conn1, before the re-send unless said
		resend    *decode.Exchange
		cause     Cause
		causeText string
	}{
		{"client timeout, client FIN", closed(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa))),
			end(decode.EndByClient, decode.EndFIN, 5000), ex(conn2, 1, 5010, 5020, 0, 1, plain(0xa)),
			CauseClientTimeout, "client FIN"},
		// The client's FIN, the broker never closing its side: the
		// exchange ends only with the capture, its end still says who.
		{"client FIN, the broker's side open to the end", ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa)),
			end(decode.EndByClient, decode.EndFIN, 2000), ex(conn2, 1, 2010, 2020, 0, 1, plain(0xa)),
			CauseClientTimeout, "client FIN"},
		{"client RST", closed(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa))),
			end(decode.EndByClient, decode.EndRST, 5000), ex(conn2, 1, 5010, 5020, 0, 1, plain(0xa)),
			CauseClientTimeout, "client RST"},
		{"broker FIN", closed(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa))),
			end(decode.EndByBroker, decode.EndFIN, 3), ex(conn2, 1, 14, 20, 0, 1, plain(0xa)),
			CauseConnectionClosed, "broker FIN"},
		{"broker RST", closed(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa))),
			end(decode.EndByBroker, decode.EndRST, 3), ex(conn2, 1, 14, 20, 0, 1, plain(0xa)),
			CauseConnectionClosed, "broker RST"},
		{"no end captured", closed(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa))),
			end(decode.EndByNone, decode.EndIdle, 3), ex(conn2, 1, 14, 20, 0, 1, plain(0xa)),
			CauseConnectionClosed, ""},
		{"re-sent before the old connection ended", closed(ex(conn1, 1, 0, noAnswer, 0, 0, plain(0xa))),
			end(decode.EndByBroker, decode.EndFIN, 30), ex(conn2, 1, 14, 20, 0, 1, plain(0xa)),
			CauseClientTimeout, ""},
		{"answer lost to a broker RST", ex(conn1, 1, 0, 5, 0, 0, plain(0xa)),
			end(decode.EndByBroker, decode.EndRST, 5.3), ex(conn2, 1, 17, 20, 0, 1, plain(0xa)),
			CauseAnswerLost, "broker RST"},
		// Must not be taken for answer_lost:
		{"answer, then a broker FIN", ex(conn1, 1, 0, 5, 0, 0, plain(0xa)),
			end(decode.EndByBroker, decode.EndFIN, 5.3), ex(conn2, 1, 17, 20, 0, 1, plain(0xa)),
			CauseNotARetry, ""},
		{"answer, broker RST much later", ex(conn1, 1, 0, 5, 0, 0, plain(0xa)),
			end(decode.EndByBroker, decode.EndRST, 1005), ex(conn2, 1, 1017, 1020, 0, 1, plain(0xa)),
			CauseNotARetry, ""},
		{"answer, client RST", ex(conn1, 1, 0, 5, 0, 0, plain(0xa)),
			end(decode.EndByClient, decode.EndRST, 5.3), ex(conn2, 1, 17, 20, 0, 1, plain(0xa)),
			CauseNotARetry, ""},
		{"answer, broker RST after the re-send", ex(conn1, 1, 0, 5, 0, 0, plain(0xa)),
			end(decode.EndByBroker, decode.EndRST, 5.3), ex(conn2, 1, 5.2, 20, 0, 1, plain(0xa)),
			CauseNotARetry, ""},
		{"answer, re-sent on the same connection", ex(conn1, 1, 0, 5, 0, 0, plain(0xa)),
			end(decode.EndByBroker, decode.EndRST, 50), ex(conn1, 2, 17, 20, 0, 1, plain(0xa)),
			CauseNotARetry, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{})
			if tt.end != nil && tt.end.Time.Before(tt.resend.RequestTime) || tt.first.Responded {
				d.Produce(tt.first)
				d.ConnEnd(conn1, *tt.end)
			} else {
				d.ConnEnd(conn1, *tt.end)
				d.Produce(tt.first)
			}
			d.Produce(tt.resend)
			fs := d.Flush()
			if len(fs) != 1 || len(fs[0].Attempts) != 2 {
				t.Fatalf("%d findings: %+v", len(fs), fs)
			}
			a0, a1 := fs[0].Attempts[0], fs[0].Attempts[1]
			if a1.Cause != tt.cause || a1.CauseError != tt.causeText {
				t.Errorf("cause %s %q, want %s %q", a1.Cause, a1.CauseError, tt.cause, tt.causeText)
			}
			if a0.End == nil || *a0.End != *tt.end {
				t.Errorf("first attempt's end %+v, want %+v", a0.End, tt.end)
			}
			if a1.End != nil && tt.resend.Conn != conn1 {
				t.Errorf("re-send's connection has an end: %+v", a1.End)
			}
		})
	}
}

// TestConnEndsBounded: at most maxConnEnds are remembered, the rest counted.
func TestConnEndsBounded(t *testing.T) {
	d := New(Options{})
	for i := range maxConnEnds + 10 {
		d.ConnEnd(&decode.ConnInfo{ID: uint64(i + 1)}, decode.ConnEnd{By: decode.EndByClient, How: decode.EndFIN, Time: ms(float64(i))})
	}
	if n := len(d.ends.m); n != maxConnEnds {
		t.Errorf("%d ends remembered, want %d", n, maxConnEnds)
	}
	if got := d.Stats().ConnEndsForgotten; got != 10 {
		t.Errorf("ConnEndsForgotten %d, want 10", got)
	}
	d.ConnEnd(nil, decode.ConnEnd{}) // no panic
}
