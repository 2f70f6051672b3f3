package detect

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// The legs of the capture-duplicate tests. A TCP proxy on the capture host
// (10.0.0.9) between the client 10.0.0.1 and the broker 10.0.0.2: the
// client's leg (clientLeg*) and the proxy's (proxyLeg*), one pair per
// client connection. natPod and natNode are one connection of a pod seen
// before and after NAT (`-i any`). copyConn is conn1 read from a capture
// given twice: the same addresses, another connection.
var (
	clientLeg1 = &decode.ConnInfo{ID: 11, Client: netip.MustParseAddrPort("10.0.0.1:50000"),
		Broker: netip.MustParseAddrPort("10.0.0.9:9092"), DetectedBy: "port", FirstSeen: t0}
	proxyLeg1 = &decode.ConnInfo{ID: 12, Client: netip.MustParseAddrPort("10.0.0.9:40000"),
		Broker: netip.MustParseAddrPort("10.0.0.2:9092"), DetectedBy: "port", FirstSeen: t0}
	clientLeg2 = &decode.ConnInfo{ID: 13, Client: netip.MustParseAddrPort("10.0.0.1:50001"),
		Broker: netip.MustParseAddrPort("10.0.0.9:9092"), DetectedBy: "port", FirstSeen: t0}
	proxyLeg2 = &decode.ConnInfo{ID: 14, Client: netip.MustParseAddrPort("10.0.0.9:40001"),
		Broker: netip.MustParseAddrPort("10.0.0.2:9092"), DetectedBy: "port", FirstSeen: t0}
	natPod = &decode.ConnInfo{ID: 15, Client: netip.MustParseAddrPort("172.17.0.2:45000"),
		Broker: netip.MustParseAddrPort("10.96.0.10:9092"), DetectedBy: "port", FirstSeen: t0}
	natNode = &decode.ConnInfo{ID: 16, Client: netip.MustParseAddrPort("10.0.0.5:61000"),
		Broker: netip.MustParseAddrPort("10.0.0.2:9092"), DetectedBy: "port", FirstSeen: t0}
	copyConn = &decode.ConnInfo{ID: 17, Client: conn1.Client, Broker: conn1.Broker, DetectedBy: "port", FirstSeen: t0.Add(500 * time.Millisecond)}
)

// echoAttempt is what an echo test expects of one attempt.
type echoAttempt struct {
	conn   uint64
	corrID int32
	offset int64 // of its response, -1 when none
}

// TestEcho: the same request (correlation ID and batch bytes) seen on two
// connections within Options.EchoWindow is one request seen twice: folded
// into the copy handed over first, no attempt and no finding of its own,
// counted in Stats.Echoes with its legs. A copy with another correlation
// ID, one sent beyond the window, or one on a reconnection of the same
// client to the same broker is a re-send.
func TestEcho(t *testing.T) {
	b, i := plain(1), idem(3, 7)
	tests := []struct {
		name     string
		window   time.Duration
		all      bool // Options.AllRecords
		feed     []*decode.Exchange
		echoes   int64
		legs     []EchoLeg
		verdicts []Verdict // of the findings, in order
		attempts []echoAttempt
	}{
		{
			// The proxy's leg is answered first (the broker answers it,
			// then the proxy the client): it is the copy handed over
			// first, and the one kept.
			name: "proxy, answered: one request",
			feed: []*decode.Exchange{
				ex(proxyLeg1, 5, 0.1, 10, 0, 4, b),
				ex(clientLeg1, 5, 0, 10.1, 0, 4, b),
			},
			echoes: 1,
			legs: []EchoLeg{{FirstClient: proxyLeg1.Client, FirstBroker: proxyLeg1.Broker,
				SecondClient: clientLeg1.Client, SecondBroker: clientLeg1.Broker, Requests: 1}},
		},
		{
			name: "proxy, idempotent, unanswered: one request",
			feed: []*decode.Exchange{
				noResp(ex(clientLeg1, 5, 0, noAnswer, 0, 0, i), decode.NoResponseClosed),
				noResp(ex(proxyLeg1, 5, 0.1, noAnswer, 0, 0, i), decode.NoResponseClosed),
			},
			echoes: 1,
			legs: []EchoLeg{{FirstClient: clientLeg1.Client, FirstBroker: clientLeg1.Broker,
				SecondClient: proxyLeg1.Client, SecondBroker: proxyLeg1.Broker, Requests: 1}},
		},
		{
			name: "NAT: one connection before and after",
			feed: []*decode.Exchange{
				ex(natNode, 9, 0.06, 3, 7, 4, i),
				ex(natPod, 9, 0, 3.06, 7, 4, i),
			},
			echoes: 1,
			legs: []EchoLeg{{FirstClient: natNode.Client, FirstBroker: natNode.Broker,
				SecondClient: natPod.Client, SecondBroker: natPod.Broker, Requests: 1}},
		},
		{
			// A capture given twice, the copy 500 ms later: the re-send
			// of the original is found once, from the first copy.
			name: "capture given twice: the findings of one copy",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(conn1, 8, 400, 401, 0, 6, b),
				ex(copyConn, 7, 500, 800, 7, 4, b),
				ex(copyConn, 8, 900, 901, 0, 6, b),
			},
			echoes: 2,
			legs: []EchoLeg{{FirstClient: conn1.Client, FirstBroker: conn1.Broker,
				SecondClient: copyConn.Client, SecondBroker: copyConn.Broker, Requests: 2}},
			verdicts: []Verdict{Duplicated},
			attempts: []echoAttempt{{1, 7, 4}, {1, 8, 6}},
		},
		{
			// Through a proxy, the first attempt unanswered (the client
			// closed: its leg completes first), the re-send on a new
			// connection answered (the proxy's leg completes first): the
			// legs name the client differently, and it is still one
			// finding, of the copies kept.
			name: "proxy, re-sent on a new connection: one finding",
			feed: []*decode.Exchange{
				noResp(ex(clientLeg1, 7, 0, noAnswer, 0, 0, b), decode.NoResponseClosed),
				noResp(ex(proxyLeg1, 7, 0.1, noAnswer, 0, 0, b), decode.NoResponseClosed),
				ex(proxyLeg2, 1, 400.1, 401, 0, 6, b),
				ex(clientLeg2, 1, 400, 401.1, 0, 6, b),
			},
			echoes: 2,
			legs: []EchoLeg{
				{FirstClient: clientLeg1.Client, FirstBroker: clientLeg1.Broker, SecondClient: proxyLeg1.Client, SecondBroker: proxyLeg1.Broker, Requests: 1},
				{FirstClient: proxyLeg2.Client, FirstBroker: proxyLeg2.Broker, SecondClient: clientLeg2.Client, SecondBroker: clientLeg2.Broker, Requests: 1},
			},
			verdicts: []Verdict{Unconfirmed},
			attempts: []echoAttempt{{11, 7, -1}, {14, 1, 6}},
		},
		{
			// librdkafka after a leader move: the first attempt answered
			// REQUEST_TIMED_OUT (appended) by the old leader, the retry to
			// the new leader on another connection happens to carry the
			// same correlation ID (each broker's connection numbers its
			// own) and is appended again: a re-send, not a proxy's copy
			// (a proxy carries one answer on both legs).
			name: "same correlation ID on another broker, answered otherwise: a re-send",
			feed: []*decode.Exchange{
				ex(conn1, 23, 0, 300, 7, 42, b),
				ex(conn3, 23, 600, 601, 0, 43, b),
			},
			verdicts: []Verdict{Duplicated},
			attempts: []echoAttempt{{1, 23, 42}, {3, 23, 43}},
		},
		{
			// The same, the retry unanswered: sent after the first copy's
			// answer came, which a proxy never forwards a request after.
			name: "same correlation ID, sent after the first answer, unanswered: a re-send",
			feed: []*decode.Exchange{
				ex(conn1, 23, 0, 300, 7, 42, b),
				noResp(ex(conn3, 23, 600, noAnswer, 0, 0, b), decode.NoResponseClosed),
			},
			verdicts: []Verdict{Unconfirmed},
			attempts: []echoAttempt{{1, 23, 42}, {3, 23, -1}},
		},
		{
			// Both refused alike (NOT_LEADER_OR_FOLLOWER), the second sent
			// after the first was answered: no proxy forwards a request
			// that late, so a re-send, not a capture duplicate.
			name: "same correlation ID, refused alike, sent after the first answer: a re-send",
			feed: []*decode.Exchange{
				ex(conn1, 26, 0, 1, 6, -1, b),
				ex(conn3, 26, 300, 301, 6, -1, b),
			},
			verdicts: []Verdict{Rejected},
			attempts: []echoAttempt{{1, 26, -1}, {3, 26, -1}},
		},
		{
			name: "another correlation ID: a re-send",
			feed: []*decode.Exchange{
				ex(proxyLeg1, 5, 0.1, 10, 7, 4, i),
				ex(clientLeg1, 6, 20, 30, 0, 4, i),
			},
			verdicts: []Verdict{Deduplicated},
			attempts: []echoAttempt{{12, 5, 4}, {11, 6, 4}},
		},
		{
			// Decided: a copy sent longer than EchoWindow after the first
			// is no proxy, NAT or clock skew but a re-send.
			name:   "beyond the window: a re-send",
			window: 100 * time.Millisecond,
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 300, 7, 4, b),
				ex(copyConn, 7, 500, 800, 0, 6, b),
			},
			verdicts: []Verdict{Duplicated},
			attempts: []echoAttempt{{1, 7, 4}, {17, 7, 6}},
		},
		{
			// Idempotent: grouped by producer ID from any address.
			name:   "a negative window folds nothing",
			window: -1,
			feed: []*decode.Exchange{
				ex(proxyLeg1, 5, 0.1, 10, 0, 4, i),
				ex(clientLeg1, 5, 0, 10.1, 0, 4, i),
			},
			verdicts: []Verdict{Deduplicated},
			attempts: []echoAttempt{{11, 5, 4}, {12, 5, 4}},
		},
		{
			// kgo numbers each connection's requests anew: a re-send on a
			// new connection of the same client to the same broker may
			// carry the first attempt's correlation ID.
			name: "a reconnection with the same correlation ID: a re-send",
			feed: []*decode.Exchange{
				noResp(ex(conn1, 1, 0, noAnswer, 0, 0, b), decode.NoResponseClosed),
				ex(conn2, 1, 60, 61, 0, 6, b),
			},
			verdicts: []Verdict{Unconfirmed},
			attempts: []echoAttempt{{1, 1, -1}, {2, 1, 6}},
		},
		{
			// An application writing the same records to two clusters the
			// capture told apart, each producer numbering its requests
			// from 1: two requests, to two logs, no echo and no re-send
			// (issue 13: dual writes were folded as capture duplicates).
			name: "dual write to two clusters: no echo",
			all:  true,
			feed: []*decode.Exchange{
				inCluster(ex(conn1, 1, 0, 2, 0, 4, recs(0xa, 1, 2)), "cluster-a"),
				inCluster(ex(natNode, 1, 0.08, 2.1, 0, 9, recs(0xa, 1, 2)), "cluster-b"),
			},
		},
		{
			// Record-level matching does not take the echo's records for a
			// copy either: all of them printed (AllRecords), the proxy's
			// leg answered first.
			name: "record matching sees no echo",
			all:  true,
			feed: []*decode.Exchange{
				ex(proxyLeg1, 5, 0.1, 10, 0, 4, recs(0xa, 1, 2, 3)),
				ex(clientLeg1, 5, 0, 10.1, 0, 4, recs(0xa, 1, 2, 3)),
			},
			echoes: 1,
			legs: []EchoLeg{{FirstClient: proxyLeg1.Client, FirstBroker: proxyLeg1.Broker,
				SecondClient: clientLeg1.Client, SecondBroker: clientLeg1.Broker, Requests: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{EchoWindow: tt.window, AllRecords: tt.all})
			var batches int64
			for k, x := range tt.feed {
				echo := d.Echo(x)
				before := d.Stats().Echoes
				d.Produce(x)
				if got := d.Stats().Echoes - before; got != map[bool]int64{true: 1, false: 0}[echo] {
					t.Errorf("exchange %d: Echo said %v, Produce counted %d echoes", k, echo, got)
				}
				if !echo {
					batches += int64(len(x.Batches))
				}
			}
			got := d.Flush()
			var verdicts []Verdict
			for _, f := range got {
				verdicts = append(verdicts, f.Verdict)
			}
			if !reflect.DeepEqual(verdicts, tt.verdicts) {
				t.Fatalf("verdicts %v, want %v: %+v", verdicts, tt.verdicts, got)
			}
			s := d.Stats()
			if s.Echoes != tt.echoes || !reflect.DeepEqual(s.EchoLegs, tt.legs) {
				t.Errorf("echoes %d legs %+v\nwant %d legs %+v", s.Echoes, s.EchoLegs, tt.echoes, tt.legs)
			}
			if s.Batches != batches {
				t.Errorf("%d batches counted, want %d: an echo is not a batch", s.Batches, batches)
			}
			if len(got) == 0 {
				return
			}
			var atts []echoAttempt
			for _, a := range got[0].Attempts {
				off := int64(-1)
				if a.Response != nil {
					off = a.Response.BaseOffset
				}
				atts = append(atts, echoAttempt{a.ConnID, a.CorrelationID, off})
			}
			if !reflect.DeepEqual(atts, tt.attempts) {
				t.Errorf("attempts %v, want %v", atts, tt.attempts)
			}
		})
	}
}

// inCluster sets x's cluster, as decode does from a Metadata response.
func inCluster(x *decode.Exchange, name string) *decode.Exchange {
	x.Cluster = name
	return x
}

// TestEchoBounded: the copies remembered are bounded by count and by time,
// whatever the traffic.
func TestEchoBounded(t *testing.T) {
	d := New(Options{Window: time.Second})
	for k := range maxEchoes + 1000 {
		d.Produce(ex(conn1, int32(k), float64(k)*0.001, float64(k)*0.001+0.0005, 0, int64(k), plain(uint32(k))))
		if n := len(d.echo.seen); n > maxEchoes {
			t.Fatalf("after %d exchanges: %d copies remembered, want at most %d", k+1, n, maxEchoes)
		}
	}
	d.Advance(ms(1e6))
	if n := len(d.echo.seen); n != 0 {
		t.Errorf("%d copies remembered long after the window", n)
	}
	if n := d.echo.order.Len(); n != 0 {
		t.Errorf("%d queued copies left long after the window", n)
	}
}

// TestEchoQueueBounded: one request sighted again and again at one time (a
// replayed request in a crafted capture, times never passing the cutoff)
// keeps one copy and a bounded queue, not one queue entry per sighting.
func TestEchoQueueBounded(t *testing.T) {
	d := New(Options{Window: time.Second})
	x := ex(conn1, 7, 1, 1.0005, 0, 0, plain(7))
	for range 3 * maxEchoes {
		d.sighted(x, 1, 1, 0, false)
	}
	if n := d.echo.order.Len(); n > 2*maxEchoes {
		t.Errorf("%d queued sightings of one request, want at most %d", n, 2*maxEchoes)
	}
	if n := len(d.echo.seen); n != 1 {
		t.Errorf("%d copies remembered, want the one", n)
	}
}
