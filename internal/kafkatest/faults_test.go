package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestConnectionFaults runs each connection-ending fault against the kgo
// producer, idempotent or not, and proves from the harness's side what
// happened: the event, the re-send on a new connection, the log, and (where
// tcpdump can run) the FIN or RST on the wire. Delay past kgo's own
// timeout is the case where the client ends the connection.
func TestConnectionFaults(t *testing.T) {
	patient := func(idempotent bool) Producer { // gives up after 100+200ms
		return Producer{Idempotent: idempotent, ProduceTimeout: 100 * time.Millisecond, TimeoutOverhead: 200 * time.Millisecond}
	}
	tests := []struct {
		name     string
		fault    Fault
		producer Producer
		dups     int // values the log holds twice
	}{
		{name: "close nonidempotent", fault: Fault{Action: CloseAfterAppend}, producer: fast(false), dups: 1},
		{name: "close idempotent", fault: Fault{Action: CloseAfterAppend}, producer: fast(true)},
		{name: "reset nonidempotent", fault: Fault{Action: ResetAfterAppend}, producer: fast(false), dups: 1},
		{name: "reset idempotent", fault: Fault{Action: ResetAfterAppend}, producer: fast(true)},
		{name: "answer then reset nonidempotent", fault: Fault{Action: AnswerThenReset}, producer: fast(false), dups: 1},
		{name: "answer then reset idempotent", fault: Fault{Action: AnswerThenReset}, producer: fast(true)},
		{name: "client timeout nonidempotent", fault: Fault{Action: Delay, Delay: 2 * time.Second}, producer: patient(false), dups: 1},
		{name: "client timeout idempotent", fault: Fault{Action: Delay, Delay: 2 * time.Second}, producer: patient(true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pcap := ""
			if testenv.CI() || testenv.CaptureErr() == nil {
				testenv.Capture(t)
				pcap = filepath.Join(t.TempDir(), "run.pcap")
			}
			f := tt.fault
			f.Every, f.Max = 2, 1
			s := Scenario{Name: "f", Topic: "orders", Records: 5, Producer: tt.producer, Faults: []Fault{f}}
			start := time.Now()
			res, err := Run(ctx, s, pcap)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Events) != 1 {
				t.Fatalf("%d faults applied, want 1: %+v", len(res.Events), res.Events)
			}
			ev := res.Events[0]
			if ev.Action != f.Action || ev.Ended.IsZero() || len(ev.BaseOffsets) != 1 || ev.BaseOffsets[0] < 0 {
				t.Fatalf("event %+v", ev)
			}
			if (f.Action == Delay) != ev.Answered.IsZero() {
				t.Errorf("event answered at %v", ev.Answered)
			}
			if res.Proxied != (f.Action == AnswerThenReset) {
				t.Errorf("proxied %v for %s", res.Proxied, f.Action)
			}
			checkLog(t, res, 1, tt.dups)
			checkFaultedRecord(t, res, ev, tt.dups > 0)
			retry := resentAfter(t, res, ev)
			t.Logf("%s: the connection ended %v after the request (%s), kgo re-sent %s on a new connection %s %.1fms later; run %v",
				f.Action, ev.Ended.Sub(ev.Received).Round(100*time.Microsecond), endingFlag(f.Action), ev.Partitions[0], retry.Conn,
				float64(retry.Received.Sub(ev.Ended).Microseconds())/1000, time.Since(start).Round(time.Millisecond))
			if f.Action == AnswerThenReset {
				checkProxyDrop(t, res, ev)
			}
			if pcap != "" {
				checkEnding(t, res, ev)
			}
		})
	}
}

func endingFlag(a Action) string {
	switch a {
	case CloseAfterAppend:
		return "the broker's FIN"
	case Delay:
		return "the client closed"
	}
	return "the broker's RST"
}

// checkFaultedRecord checks the faulted record: the log holds it at the offset
// the event names, and twice when twice is set, else once.
func checkFaultedRecord(t *testing.T, res *Result, ev Event, twice bool) {
	t.Helper()
	p, err := partitionNumber(ev.Partitions[0])
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := res.Log.Partition(p)
	value, found := "", false
	for _, r := range pl.Records {
		if r.Offset == ev.BaseOffsets[0] {
			value, found = r.Value, true
		}
	}
	if !found {
		t.Fatalf("the log holds no record at the faulted offset %d", ev.BaseOffsets[0])
	}
	want := 1
	if twice {
		want = 2
	}
	for _, c := range pl.Copies() {
		if c.Value == value && len(c.Records) != want {
			t.Errorf("faulted value %q held %d times, want %d", value, len(c.Records), want)
		}
	}
}

// partitionNumber is the partition number of "topic/partition".
func partitionNumber(name string) (int32, error) {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			n, err := strconv.ParseInt(name[i+1:], 10, 32)
			return int32(n), err
		}
	}
	return 0, fmt.Errorf("partition name %q has no /", name)
}

// checkProxyDrop checks the proxy's side of AnswerThenReset: it dropped the
// answer on the event's leg and reset the client.
func checkProxyDrop(t *testing.T, res *Result, ev Event) {
	t.Helper()
	for _, l := range res.Legs {
		if l.Leg != ev.Conn {
			continue
		}
		if len(l.Dropped) != 1 || l.Dropped[0] != ev.CorrelationID || l.ClientReset.IsZero() || l.Client != ev.Client {
			t.Errorf("leg %+v for event %+v", l, ev)
		}
		return
	}
	t.Errorf("no proxy leg %s: %+v", ev.Conn, res.Legs)
}

// tcpSegment is one TCP tcpSegment of a capture.
type tcpSegment struct {
	at       time.Time
	src, dst int
	fin, rst bool
	payload  []byte
}

// readTCPSegments reads the TCP segments of a pcap file (gopacket, not
// kdupcap's own capture reading).
func readTCPSegments(t *testing.T, path string) []tcpSegment {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []tcpSegment
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		tcp, ok := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if !ok {
			continue
		}
		out = append(out, tcpSegment{at: ci.Timestamp, src: int(tcp.SrcPort), dst: int(tcp.DstPort),
			fin: tcp.FIN, rst: tcp.RST, payload: append([]byte(nil), tcp.Payload...)})
	}
}

// checkEnding checks in the capture how the broker ended the faulted
// connection: CloseAfterAppend with a FIN and no RST, ResetAfterAppend with
// an RST and no answer, AnswerThenReset with the answer, then an RST.
func checkEnding(t *testing.T, res *Result, ev Event) {
	t.Helper()
	_, cport, err := net.SplitHostPort(ev.Conn)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := strconv.Atoi(cport)
	broker := res.Ports[ev.Node]
	var answer, fin, rst, clientFin time.Time
	for _, sg := range readTCPSegments(t, res.Pcap) {
		if sg.src == client && sg.dst == broker && sg.fin && clientFin.IsZero() {
			clientFin = sg.at
		}
		if sg.src != broker || sg.dst != client {
			continue
		}
		if len(sg.payload) >= 8 && int32(be32(sg.payload[4:])) == ev.CorrelationID && answer.IsZero() {
			answer = sg.at
		}
		if sg.fin && fin.IsZero() {
			fin = sg.at
		}
		if sg.rst && rst.IsZero() {
			rst = sg.at
		}
	}
	clientSaid := "none"
	if !clientFin.IsZero() {
		clientSaid = clientFin.Sub(ev.Received).Round(100*time.Microsecond).String() + " after the request"
	}
	t.Logf("wire, broker %d -> client %d: answer %v, FIN %v, RST %v; client's FIN: %s", broker, client,
		!answer.IsZero(), !fin.IsZero(), !rst.IsZero(), clientSaid)
	switch ev.Action {
	case Delay:
		if clientFin.IsZero() || !answer.IsZero() || (!fin.IsZero() && fin.Before(clientFin)) || (!rst.IsZero() && rst.Before(clientFin)) {
			t.Errorf("client timeout: want the client's FIN first, no answer")
		}
	case CloseAfterAppend:
		if fin.IsZero() || !rst.IsZero() || !answer.IsZero() {
			t.Errorf("close: want a FIN, no RST and no answer from the broker")
		}
	case ResetAfterAppend:
		if rst.IsZero() || !fin.IsZero() || !answer.IsZero() {
			t.Errorf("reset: want an RST, no FIN and no answer from the broker")
		}
	case AnswerThenReset:
		if answer.IsZero() || rst.IsZero() || rst.Before(answer) || !fin.IsZero() {
			t.Errorf("answer then reset: want the answer, then an RST, no FIN from the broker")
		}
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// resent returns the first produce request that carried the faulted
// partition after the fault ended the connection; it must have come on
// another connection and been appended.
func resentAfter(t *testing.T, res *Result, ev Event) Exchange {
	t.Helper()
	for _, x := range res.Exchanges {
		if x.Received.After(ev.Ended) && x.Carries(ev.Partitions[0]) {
			if x.Conn == ev.Conn {
				t.Errorf("re-send %+v on the faulted connection %s", x, ev.Conn)
			}
			return x
		}
	}
	t.Fatalf("no re-send of %s after %v: %+v", ev.Partitions[0], ev.Ended, res.Exchanges)
	return Exchange{}
}

// TestEndingWithUnreadRequests checks how the broker ends a connection
// where a plain close would send RST: a raw client pipelines three produce
// requests and the first is faulted; kfake has read the second, the third
// sits unread in the broker's receive buffer. CloseAfterAppend must still
// end it with a FIN (the client reads EOF), ResetAfterAppend with an RST
// (ECONNRESET), and neither may append the requests after the faulted one.
func TestEndingWithUnreadRequests(t *testing.T) {
	tests := []struct {
		action Action
		reset  bool
	}{
		{action: CloseAfterAppend},
		{action: ResetAfterAppend, reset: true},
	}
	for _, tt := range tests {
		t.Run(tt.action.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := NewCluster([]Fault{{Action: tt.action, Max: 1}}, kfake.SeedTopics(1, "orders"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			nc, err := net.Dial("tcp", c.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
			var out []byte
			for i := range 3 {
				out = append(out, f.AppendRequest(nil, rawProduceRequest(t, "orders", fmt.Sprintf("raw-%d", i)), int32(i+1))...) // AppendRequest sizes all of dst
			}
			if _, err := nc.Write(out); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(nc)
			if gotReset := errors.Is(err, syscall.ECONNRESET); gotReset != tt.reset || (err != nil && !gotReset) {
				t.Fatalf("client read %d bytes, then %v; want reset %v", len(got), err, tt.reset)
			}
			if len(got) != 0 {
				t.Errorf("client read %d bytes, want no answer", len(got))
			}
			if evs := c.Events(); len(evs) != 1 || evs[0].CorrelationID != 1 || evs[0].Ended.IsZero() {
				t.Errorf("events %+v", evs)
			}
			log, err := ReadBack(ctx, c.Addr(), "orders")
			if err != nil {
				t.Fatal(err)
			}
			if pl, _ := log.Partition(0); len(pl.Records) != 1 || pl.Records[0].Value != "raw-0" {
				t.Errorf("log holds %+v, want raw-0 alone", pl.Records)
			}
		})
	}
}

// rawProduceRequest is a produce request v7 (acks=all) of one batch of one
// record with value to partition 0 of topic.
func rawProduceRequest(t *testing.T, topic, value string) *kmsg.ProduceRequest {
	t.Helper()
	rec := kmsg.Record{Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the rest after a one-byte length
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: rec.AppendTo(nil)}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProxyTLS runs a fault behind the proxy over TLS: the proxy passes the
// ciphertext through and mirrors the broker's FIN.
func TestProxyTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tl, err := NewTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := Scenario{Name: "p", Topic: "orders", Records: 4, Producer: fast(false), TLS: tl, Proxy: true,
		Faults: []Fault{{Action: CloseAfterAppend, Every: 2, Max: 1}}}
	res, err := Run(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Proxied || len(res.Legs) == 0 || len(res.Events) != 1 || res.Events[0].Client == "" || res.Events[0].Client == res.Events[0].Conn {
		t.Fatalf("proxied %v, legs %+v, events %+v", res.Proxied, res.Legs, res.Events)
	}
	checkLog(t, res, 1, 1)
}

func TestConfigInvalid(t *testing.T) {
	c, err := NewClusterWith(ClusterConfig{Brokers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Addrs()) != 2 || len(c.Ports()) != 2 || c.Proxied() || c.Addr() != c.Addrs()[0] || c.Port() != c.Ports()[0] {
		t.Errorf("addrs %v ports %v proxied %v", c.Addrs(), c.Ports(), c.Proxied())
	}
	if err := c.SetFaults(Fault{Action: AnswerThenReset, Max: 1}); err == nil {
		t.Error("AnswerThenReset accepted without the proxy")
	}
	ctx := context.Background()
	tl, err := NewTLS(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    Scenario
	}{
		{name: "moves on one broker", s: Scenario{LeaderMoves: &LeaderMoves{Min: time.Millisecond, Max: time.Millisecond}}},
		{name: "moves without interval", s: Scenario{Brokers: 2, LeaderMoves: &LeaderMoves{}}},
		{name: "moves max below min", s: Scenario{Brokers: 2, LeaderMoves: &LeaderMoves{Min: 2 * time.Millisecond, Max: time.Millisecond}}},
		{name: "answer then reset over TLS", s: Scenario{TLS: tl, Faults: []Fault{{Action: AnswerThenReset, Max: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Topic, tt.s.Records = "orders", 1
			if _, err := Run(ctx, tt.s, ""); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
