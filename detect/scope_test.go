package detect

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// Connections of the scope tests: conn3 is the same client as conn1 and
// conn2 (10.0.0.1, client.id "rdkafka") on another broker; natConn comes
// from another address (a producer behind NAT, or a second host).
var (
	conn3 = &decode.ConnInfo{ID: 3, Client: netip.MustParseAddrPort("10.0.0.1:50002"),
		Broker: netip.MustParseAddrPort("10.0.0.3:9092"), DetectedBy: "port", FirstSeen: t0}
	natConn = &decode.ConnInfo{ID: 4, Client: netip.MustParseAddrPort("10.9.9.9:41000"),
		Broker: netip.MustParseAddrPort("10.0.0.2:9092"), DetectedBy: "port", FirstSeen: t0}
)

// withClientID gives x another client.id.
func withClientID(x *decode.Exchange, id string) *decode.Exchange { x.ClientID = &id; return x }

// scopeAttempt is what a scope test expects of one attempt.
type scopeAttempt struct {
	conn   uint64
	corrID int32
	cause  Cause
}

// TestScope: attempts of one batch on several connections of one client are
// one finding of scope client (which connection and broker each used, the
// cause across connections); different clients are not grouped, an
// idempotent producer is known by its producer ID and epoch from any
// address; Options.Scope chooses which findings are looked for.
func TestScope(t *testing.T) {
	b := plain(1)
	otherEpoch := idem(1, 5)
	otherEpoch.ProducerEpoch = 1
	tests := []struct {
		name     string
		scope    Scope
		window   time.Duration
		feed     []*decode.Exchange
		scopes   []Scope // of each finding, in order; nil: no finding
		verdict  Verdict // of the first finding
		attempts []scopeAttempt
		reason   string // of the first finding, when set
	}{
		{
			name: "closed without answer, resent on a new connection",
			feed: []*decode.Exchange{
				// the retry is answered before the old connection's close
				// completes the first exchange
				ex(conn2, 1, 2000, 2001, 0, 5, b),
				noResp(ex(conn1, 7, 0, noAnswer, 0, 0, b), decode.NoResponseClosed),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Unconfirmed,
			attempts: []scopeAttempt{{1, 7, ""}, {2, 1, CauseConnectionClosed}},
			reason:   "attempt 7 (connection 1) has no response in the capture; producer not idempotent: the log may hold the batch twice",
		},
		{
			name: "no answer by the end of the capture, resent on a new connection",
			feed: []*decode.Exchange{
				ex(conn2, 1, 2000, 2001, 0, 5, b),
				ex(conn1, 7, 0, noAnswer, 0, 0, b),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Unconfirmed,
			attempts: []scopeAttempt{{1, 7, ""}, {2, 1, CauseClientTimeout}},
		},
		{
			name: "appended on both connections",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(conn2, 1, 400, 401, 0, 6, b),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Duplicated,
			attempts: []scopeAttempt{{1, 7, ""}, {2, 1, CauseBrokerError}},
			reason:   "attempts 7 (connection 1) and 1 (connection 2) were appended at offsets 4 and 6: the log holds the batch twice",
		},
		{
			name: "NOT_LEADER_OR_FOLLOWER, retried at another broker",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 1, 6, -1, b),
				ex(conn3, 2, 100, 101, 0, 9, b),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Single,
			attempts: []scopeAttempt{{1, 7, ""}, {3, 2, CauseBrokerError}},
		},
		{
			name: "twice on one connection, then on another: one finding",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				noResp(ex(conn1, 8, 400, noAnswer, 0, 0, b), decode.NoResponseClosed),
				ex(conn2, 1, 900, 901, 0, 6, b),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Duplicated,
			attempts: []scopeAttempt{{1, 7, ""}, {1, 8, CauseBrokerError}, {2, 1, CauseConnectionClosed}},
		},
		{
			name: "one connection keeps scope connection",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(conn1, 8, 400, 401, 0, 6, b),
			},
			scopes:   []Scope{ScopeConnection},
			verdict:  Duplicated,
			attempts: []scopeAttempt{{1, 7, ""}, {1, 8, CauseBrokerError}},
			reason:   "attempts 7 and 8 were appended at offsets 4 and 6: the log holds the batch twice",
		},
		{
			name:  "client scope leaves out one connection's resends",
			scope: ScopeClient,
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(conn1, 8, 400, 401, 0, 6, b),
				ex(conn1, 9, 500, 800, 7, 10, plain(2)),
				ex(conn2, 1, 900, 901, 0, 11, plain(2)),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Duplicated,
			attempts: []scopeAttempt{{1, 9, ""}, {2, 1, CauseBrokerError}},
		},
		{
			name:  "connection scope leaves out resends on a new connection",
			scope: ScopeConnection,
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(conn2, 1, 400, 401, 0, 6, b),
			},
		},
		{
			name: "different client addresses, not idempotent: not grouped",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(natConn, 1, 400, 401, 0, 6, b),
			},
		},
		{
			name: "different client.id: not grouped",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				withClientID(ex(conn2, 1, 400, 401, 0, 6, b), "other"),
			},
		},
		{
			name: "idempotent, same producer ID and epoch from another address",
			feed: []*decode.Exchange{
				noResp(ex(conn1, 7, 0, noAnswer, 0, 0, idem(1, 5)), decode.NoResponseClosed),
				withClientID(ex(natConn, 1, 2000, 2001, 0, 3, idem(1, 5)), "other"),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Unconfirmed,
			attempts: []scopeAttempt{{1, 7, ""}, {4, 1, CauseConnectionClosed}},
		},
		{
			// Producer IDs are per cluster, and every cluster hands out 0,
			// 1, 2...: a host producing to two clusters has two producers
			// of one ID and epoch. Their batches differ in bytes (a retry
			// of one carries its bytes again), so the producer ID alone,
			// from another address, does not make a re-send.
			name: "idempotent, same producer ID and epoch from another address, other bytes: two producers",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 0, 3, idem(1, 5)),
				withClientID(ex(natConn, 1, 400, 401, 0, 9, idem(1, 6)), "other"),
			},
		},
		{
			name: "idempotent, two producers of one ID, the second retries on its connection",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 0, 3, idem(1, 5)),
				withClientID(ex(natConn, 1, 400, 401, 7, 9, idem(1, 6)), "other"),
				withClientID(ex(natConn, 2, 500, 501, 0, 9, idem(1, 6)), "other"),
			},
			scopes:   []Scope{ScopeConnection},
			verdict:  Deduplicated,
			attempts: []scopeAttempt{{4, 1, ""}, {4, 2, CauseBrokerError}},
		},
		{
			name: "idempotent, rebuilt on a new connection of the same client",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 3, idem(1, 5)),
				ex(conn2, 1, 400, 401, 0, 3, idem(1, 6)),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Deduplicated,
			attempts: []scopeAttempt{{1, 7, ""}, {2, 1, CauseBrokerError}},
		},
		{
			name: "idempotent, deduplicated on the new connection",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 3, idem(1, 5)),
				ex(conn2, 1, 400, 401, 0, 3, idem(1, 5)),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Deduplicated,
			attempts: []scopeAttempt{{1, 7, ""}, {2, 1, CauseBrokerError}},
		},
		{
			name: "idempotent, another epoch: not grouped",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 3, idem(1, 5)),
				ex(conn2, 1, 400, 401, 0, 4, otherEpoch),
			},
		},
		{
			name:   "beyond the window: not grouped",
			window: time.Second,
			feed: []*decode.Exchange{
				noResp(ex(conn1, 7, 0, noAnswer, 0, 0, b), decode.NoResponseClosed),
				ex(conn2, 1, 1500, 1501, 0, 6, b),
			},
		},
		{
			name:   "within the window",
			window: time.Second,
			feed: []*decode.Exchange{
				noResp(ex(conn1, 7, 0, noAnswer, 0, 0, b), decode.NoResponseClosed),
				ex(conn2, 1, 900, 901, 0, 6, b),
			},
			scopes:   []Scope{ScopeClient},
			verdict:  Unconfirmed,
			attempts: []scopeAttempt{{1, 7, ""}, {2, 1, CauseConnectionClosed}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{Scope: tt.scope, Window: tt.window})
			for _, x := range tt.feed {
				d.Produce(x)
			}
			got := d.Flush()
			var scopes []Scope
			for _, f := range got {
				scopes = append(scopes, f.Scope)
			}
			if !reflect.DeepEqual(scopes, tt.scopes) {
				t.Fatalf("findings of scopes %v, want %v: %+v", scopes, tt.scopes, got)
			}
			if len(got) == 0 {
				return
			}
			f := got[0]
			if f.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s (%s)", f.Verdict, tt.verdict, f.Reason)
			}
			if tt.reason != "" && f.Reason != tt.reason {
				t.Errorf("reason %q\nwant   %q", f.Reason, tt.reason)
			}
			var atts []scopeAttempt
			for _, a := range f.Attempts {
				atts = append(atts, scopeAttempt{a.ConnID, a.CorrelationID, a.Cause})
			}
			if !reflect.DeepEqual(atts, tt.attempts) {
				t.Errorf("attempts %v, want %v", atts, tt.attempts)
			}
			conns := map[uint64]*decode.ConnInfo{1: conn1, 2: conn2, 3: conn3, 4: natConn}
			for i, a := range f.Attempts {
				c := conns[a.ConnID]
				if c == nil || a.Client != c.Client || a.Broker != c.Broker {
					t.Errorf("attempt %d: connection %d %s -> %s, want the exchange's", i, a.ConnID, a.Client, a.Broker)
				}
			}
			first := f.Attempts[0]
			if f.ConnID != first.ConnID || f.Client != first.Client || f.Broker != first.Broker {
				t.Errorf("finding on connection %d %s -> %s, want the first attempt's", f.ConnID, f.Client, f.Broker)
			}
			if s := d.Stats(); s.Findings != int64(len(got)) {
				t.Errorf("stats count %d findings, Flush gave %d", s.Findings, len(got))
			}
		})
	}
}

// TestScopeStreaming: a streaming Detector reports a batch re-sent on a new connection
// once, with every attempt; with ScopeClient, a batch re-sent on one
// connection only is never reported.
func TestScopeStreaming(t *testing.T) {
	b := plain(1)
	for _, scope := range []Scope{ScopeBoth, ScopeClient} {
		t.Run(string(scope), func(t *testing.T) {
			var got []Finding
			d := New(Options{Streaming: true, Scope: scope, Settle: time.Second, OnFinding: func(f Finding) { got = append(got, f) }})
			d.Produce(ex(conn1, 1, 0, 10, 7, 1, plain(2)))
			d.Produce(ex(conn1, 2, 20, 30, 0, 2, plain(2)))
			d.Produce(noResp(ex(conn1, 7, 100, noAnswer, 0, 0, b), decode.NoResponseClosed))
			d.Produce(ex(conn2, 1, 2000, 2001, 0, 6, b))
			d.Advance(ms(10_000))
			d.Flush()
			var scopes []Scope
			for _, f := range got {
				scopes = append(scopes, f.Scope)
			}
			want := []Scope{ScopeConnection, ScopeClient}
			if scope == ScopeClient {
				want = want[1:]
			}
			if !reflect.DeepEqual(scopes, want) {
				t.Fatalf("reported scopes %v, want %v: %+v", scopes, want, got)
			}
			f := got[len(got)-1]
			if len(f.Attempts) != 2 || f.Revision != 0 || f.Attempts[1].Cause != CauseConnectionClosed {
				t.Errorf("cross-connection finding: %+v", f)
			}
		})
	}
}

// TestScopeBounded: the index of batches by client forgets them with the
// batches: after the window, or beyond MaxBatches, nothing of them is left.
func TestScopeBounded(t *testing.T) {
	for _, scope := range []Scope{ScopeBoth, ScopeConnection, ScopeClient} {
		t.Run(string(scope)+"/", func(t *testing.T) {
			d := New(Options{Scope: scope, Window: time.Second, MaxBatches: 100})
			conns := []*decode.ConnInfo{conn1, conn2, conn3, natConn}
			for i := range 10_000 {
				c := conns[i%len(conns)]
				d.Produce(ex(c, int32(i), float64(i), float64(i)+0.5, 0, int64(i), plain(uint32(i/2))))
				d.Produce(ex(c, int32(i), float64(i), float64(i)+0.5, 0, int64(i), idem(int32(i/2), uint32(i))))
				if n := len(d.byBytes) + len(d.bySeq); n > 100 || n != d.remembered {
					t.Fatalf("after %d exchanges: %d keys for %d batches, want at most 100 and equal", i+1, n, d.remembered)
				}
			}
			d.Flush()
			if len(d.byBytes)+len(d.bySeq) != 0 {
				t.Errorf("Flush left %d keys", len(d.byBytes)+len(d.bySeq))
			}
		})
	}
}
