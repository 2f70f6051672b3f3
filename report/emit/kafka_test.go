package emit

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/internal/reporttest"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafka emits the findings and the summary to an in-process cluster,
// reads them back and compares each value byte for byte with report.NewJSON's
// line.
func TestKafka(t *testing.T) {
	const topic = "kdupcap-findings"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	k, err := NewKafka(c.ListenAddrs(), topic)
	if err != nil {
		t.Fatal(err)
	}
	fs, s := reporttest.Findings(), reporttest.Summary()
	reporttest.Write(t, k, fs, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := k.Finding(fs[0]); err == nil {
		t.Error("Finding after Close succeeded")
	}
	if sent, failed := k.Counts(); sent != int64(len(fs)+1) || failed != 0 {
		t.Errorf("sent %d failed %d, want %d 0", sent, failed, len(fs)+1)
	}

	var want bytes.Buffer
	reporttest.Write(t, report.NewJSON(&want), fs, s)
	lines := bytes.Split(bytes.TrimSuffix(want.Bytes(), []byte("\n")), []byte("\n"))
	keys := []string{
		"172.18.0.1:40312|172.18.0.3:19092|test|0|0x0a1b2c3d",
		"172.18.0.1:40400|172.18.0.4:29092|test|1|0xdeadbeef",
		"10.0.0.1:50000|10.0.0.2:9092|orders|3|0x00000001",
		"[::1]:51000|[::1]:9092|deadbeef-0102-0304-0506-0708090a0b0c|0|0xffffffff",
		"",
	}

	readConns := newConnSet()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Dialer(readConns.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < len(lines) && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Fatalf("fetch: %v", errs)
		}
		got = append(got, fetches.Records()...)
	}
	if len(got) != len(lines) {
		t.Fatalf("%d records read back, want %d", len(got), len(lines))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, lines[i]) {
			t.Errorf("record %d value\n%s\nwant\n%s", i, r.Value, lines[i])
		}
		if string(r.Key) != keys[i] {
			t.Errorf("record %d key %q, want %q", i, r.Key, keys[i])
		}
	}

	// The emitter knows its own connections, in both directions, also
	// after closing them, and no other.
	brokers := map[netip.AddrPort]bool{}
	for _, a := range c.ListenAddrs() {
		brokers[netip.MustParseAddrPort(a)] = true
	}
	own := ends(k.conns)
	if len(own) == 0 {
		t.Fatal("no connection recorded")
	}
	for _, e := range own {
		if !brokers[e.remote] {
			t.Errorf("recorded %v, not to a broker", e)
		}
		mapped := netip.AddrPortFrom(netip.AddrFrom16(e.local.Addr().As16()), e.local.Port())
		if !k.IsOwnConn(e.local, e.remote) || !k.IsOwnConn(e.remote, e.local) || !k.IsOwnConn(mapped, e.remote) {
			t.Errorf("IsOwnConn false for %v", e)
		}
		other := netip.AddrPortFrom(e.local.Addr(), e.local.Port()+1)
		if k.IsOwnConn(other, e.remote) {
			t.Errorf("IsOwnConn true for %v -> %v", other, e.remote)
		}
	}
	readers := ends(readConns)
	if len(readers) == 0 {
		t.Fatal("the reader recorded no connection")
	}
	for _, e := range readers {
		if k.IsOwnConn(e.local, e.remote) {
			t.Errorf("IsOwnConn true for the reader's %v", e)
		}
	}
}

func ends(s *connSet) []connEnds {
	s.mu.Lock()
	defer s.mu.Unlock()
	var es []connEnds
	for e := range s.conns {
		es = append(es, e)
	}
	return es
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestKafkaFailures: records that cannot be delivered, or do not fit the
// buffer, are counted and returned, never dropped silently.
func TestKafkaFailures(t *testing.T) {
	k, err := NewKafka([]string{deadAddr(t)}, "findings",
		kgo.RecordDeliveryTimeout(time.Second), kgo.MaxBufferedRecords(1))
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, f := range reporttest.Findings() {
		if err := k.Finding(f); err != nil {
			errs = append(errs, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		t.Fatal("no error returned")
	}
	var full, timedOut bool
	for _, err := range errs {
		if !strings.HasPrefix(err.Error(), "report: kafka: ") {
			t.Errorf("error %q lacks the prefix", err)
		}
		full = full || errors.Is(err, kgo.ErrMaxBuffered)
		timedOut = timedOut || errors.Is(err, kgo.ErrRecordTimeout)
	}
	if !full || !timedOut {
		t.Errorf("errors %v: want ErrMaxBuffered (%v) and ErrRecordTimeout (%v)", errs, full, timedOut)
	}
	if sent, failed := k.Counts(); sent != 0 || failed != int64(len(reporttest.Findings())) {
		t.Errorf("sent %d failed %d, want 0 %d", sent, failed, len(reporttest.Findings()))
	}
}

func TestNewKafkaErrors(t *testing.T) {
	if _, err := NewKafka(nil, "t"); err == nil || !strings.Contains(err.Error(), "no seed broker") {
		t.Errorf("no seeds: %v", err)
	}
	if _, err := NewKafka([]string{"127.0.0.1:9"}, "a/b"); err == nil || !strings.Contains(err.Error(), "character '/'") {
		t.Errorf("bad topic: %v", err)
	}
}

// TestConnSetLinger: a closed connection stays known for ownConnLinger,
// then is forgotten at the next dial, so the set stays bounded over days.
func TestConnSetLinger(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	s := newConnSet()
	s.now = func() time.Time { return now }
	dial := func() (net.Conn, connEnds) {
		c, err := s.dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		e, ok := endsOf(c)
		if !ok {
			t.Fatal("no TCP ends")
		}
		return c, e
	}
	c1, e1 := dial()
	now = now.Add(time.Hour)
	if !s.has(e1.local, e1.remote) {
		t.Fatal("open connection unknown")
	}
	c1.Close()
	c1.Close() // twice is harmless
	now = now.Add(ownConnLinger)
	c2, e2 := dial()
	defer c2.Close()
	if !s.has(e1.remote, e1.local) {
		t.Error("connection forgotten within the linger")
	}
	now = now.Add(time.Second)
	c3, _ := dial()
	defer c3.Close()
	if s.has(e1.local, e1.remote) {
		t.Error("connection kept past the linger")
	}
	if !s.has(e2.local, e2.remote) || len(ends(s)) != 2 {
		t.Errorf("open connections %v, want 2", ends(s))
	}
}
