package fleet

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

func strp(s string) *string { return &s }

// sampleExchange is one exchange of every field the schema carries.
func sampleExchange(responded bool) *decode.Exchange {
	t0 := time.Unix(1700000000, 123456789)
	c := &decode.ConnInfo{ID: 7, Client: netip.MustParseAddrPort("10.0.0.1:50000"), Broker: netip.MustParseAddrPort("[2001:db8::1]:9092"),
		DetectedBy: "port", FirstSeen: t0.Add(-time.Second), ClientSoftwareName: "kgo", ClientSoftwareVersion: "1.2",
		ApiVersionsSent: true, ApiVersionsVersion: 3, SASLMechanism: "PLAIN", SASLUser: "u"}
	x := &decode.Exchange{Conn: c, ClientID: strp("app"), CorrelationID: 42, Version: 9, Acks: -1, TimeoutMillis: 3000,
		TransactionalID: strp("txn"), Cluster: "prod", RequestTime: t0, InFlight: 2}
	if responded {
		x.Responded, x.ResponseTime, x.ThrottleMillis = true, t0.Add(3*time.Millisecond), 5
	} else {
		x.NoResponse = decode.NoResponseClosed
	}
	b := decode.Batch{Topic: "orders", TopicID: [16]byte{1, 2, 3}, Partition: 3, Magic: 2, CRC: 0xdeadbeef, Attributes: 4,
		LastOffsetDelta: 9, FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000009, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: 10, Length: 700, Hash: 0x1122334455667788,
		Records: []decode.Record{{OffsetDelta: 0, TimestampMillis: 1700000000001, Key: nil, KeyLen: -1, Value: []byte("v"), ValueLen: 300,
			Headers: []decode.RecordHeader{{Key: "h", Value: []byte("x"), ValueLen: 1}, {Key: "n", ValueLen: -1}}}}}
	b.SetRecordPrints([]decode.RecordPrint{{Hash: 1, OffsetDelta: 0, Index: 0}, {Hash: 2, OffsetDelta: 2, Index: 1}})
	if responded {
		b.Response = &decode.PartitionResponse{ErrorCode: 7, BaseOffset: 112, LogAppendTime: -1, LogStartOffset: 0, ErrorMessage: strp("slow")}
	}
	plain := decode.Batch{Topic: "orders", Partition: 1, Magic: 2, CRC: 1, ProducerID: 5, ProducerEpoch: 1, FirstSequence: 100, NumRecords: 1, Length: 70}
	x.Batches = []decode.Batch{b, plain}
	return x
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name      string
		responded bool
		details   bool
		full      bool
	}{
		{"answered, details, prints", true, true, true},
		{"unanswered, bare", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := sampleExchange(tt.responded)
			h := Header{Host: "broker-1", Run: 99, Seq: 3, At: x.RequestTime.Add(4 * time.Millisecond)}
			v := AppendAttempt(nil, h, x, tt.details, func(i int) bool { return tt.full && i == 0 })
			rec, err := Decode(v)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Kind != KindAttempt || rec.Header != (Header{Host: "broker-1", Run: 99, Seq: 3, At: time.Unix(0, h.At.UnixNano())}) {
				t.Fatalf("header %+v", rec.Header)
			}
			got := rec.Exchange
			if rec.Details != tt.details || tt.details && (rec.Conn.ClientSoftwareName != "kgo" || rec.Conn.SASLUser != "u" || !rec.Conn.FirstSeen.Equal(x.Conn.FirstSeen) || rec.Conn.ApiVersionsVersion != 3) {
				t.Errorf("details %v: %+v", rec.Details, rec.Conn)
			}
			if rec.Conn.ID != 7 || rec.Conn.Client != x.Conn.Client || rec.Conn.Broker != x.Conn.Broker {
				t.Errorf("conn %+v", rec.Conn)
			}
			got.Conn = x.Conn
			want := *x
			want.Batches = append([]decode.Batch(nil), x.Batches...)
			if !tt.full {
				want.Batches[0].Records = nil
				want.Batches[0].SetRecordPrints(nil)
				got.Batches[0].SetRecordPrints(nil)
			}
			for i := range got.Batches {
				if g, w := got.Batches[i].RecordPrints(), want.Batches[i].RecordPrints(); !reflect.DeepEqual(g, w) {
					t.Errorf("batch %d prints %v, want %v", i, g, w)
				}
				// RecordPrints is compared; the unexported state is not.
				got.Batches[i].SetRecordPrints(nil)
				want.Batches[i].SetRecordPrints(nil)
			}
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("got  %+v\nwant %+v", got, &want)
			}
			t.Logf("%d bytes", len(v))
		})
	}
}

func TestConnEndRoundTrip(t *testing.T) {
	c := &decode.ConnInfo{ID: 3, Client: netip.MustParseAddrPort("10.0.0.1:5"), Broker: netip.MustParseAddrPort("10.0.0.2:9092")}
	at := time.Unix(100, 5)
	for _, e := range []decode.ConnEnd{{By: decode.EndByBroker, How: decode.EndRST, Time: at.Add(-time.Millisecond)},
		{How: decode.EndOfCapture, Time: at}, {By: decode.EndByClient, How: "odd", Time: at}} {
		rec, err := Decode(AppendConnEnd(nil, Header{Host: "h", At: at}, c, e))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind != KindConnEnd || rec.End.By != e.By || rec.End.How != e.How || !rec.End.Time.Equal(e.Time) || rec.ConnID != 3 {
			t.Errorf("%+v: got %+v", e, rec)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	v := AppendAttempt(nil, Header{Host: "h", At: time.Unix(1, 0)}, sampleExchange(true), true, func(int) bool { return true })
	for _, tt := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other version", append([]byte{2}, v[1:]...)},
		{"cut", v[:len(v)-3]},
		{"trailing", append(append([]byte(nil), v...), 0)},
		{"huge count", []byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"unknown kind", append([]byte{1, 9}, v[2:]...)},
	} {
		_, err := Decode(tt.b)
		switch {
		case err == nil:
			t.Errorf("%s: no error", tt.name)
		case tt.name == "other version" && !errors.Is(err, ErrVersion):
			t.Errorf("%s: %v", tt.name, err)
		case tt.name == "unknown kind" && !errors.Is(err, ErrKind):
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestTxnRoundTrip: EndTxn (answered or not) and InitProducerId records
// decode to what was encoded, and go under the key of their client's
// attempts, whichever connection (coordinator's) carried them.
func TestTxnRoundTrip(t *testing.T) {
	t0 := time.Unix(1700000000, 5)
	coord := &decode.ConnInfo{ID: 9, Client: netip.MustParseAddrPort("10.0.0.1:50007"), Broker: netip.MustParseAddrPort("10.0.0.3:9092")}
	ends := []*decode.EndTxn{
		{Conn: coord, ClientID: strp("app"), CorrelationID: 12, Version: 5, RequestTime: t0, TransactionalID: "txn-1",
			ProducerID: 1 << 40, ProducerEpoch: 3, Commit: false, Responded: true, ResponseTime: t0.Add(2 * time.Millisecond),
			ErrorCode: 0, BumpedEpoch: 4},
		{Conn: coord, CorrelationID: 13, Version: 3, RequestTime: t0, TransactionalID: "txn-1", ProducerID: 7, ProducerEpoch: 0,
			Commit: true, BumpedEpoch: -1},
	}
	for _, x := range ends {
		var key, val []byte
		NewEncoder(EncoderOptions{Host: "b3"}).EndTxn(x, func(k, v []byte) { key, val = append(key, k...), append(val, v...) })
		rec, err := Decode(val)
		if err != nil {
			t.Fatal(err)
		}
		got := rec.EndTxn
		if rec.Kind != KindEndTxn || got == nil || rec.ConnID != 9 || rec.Conn.Broker != coord.Broker {
			t.Fatalf("record %+v", rec)
		}
		got.Conn = coord
		if !reflect.DeepEqual(got, x) {
			t.Errorf("got  %+v\nwant %+v", got, x)
		}
		if want := Key(coord.Client, x.ClientID); string(key) != string(want) {
			t.Errorf("key %q, want the attempts' %q", key, want)
		}
	}
	init := &decode.InitProducerID{Conn: coord, ClientID: strp("app"), CorrelationID: 1, Version: 4, RequestTime: t0,
		ResponseTime: t0.Add(time.Millisecond), TransactionalID: strp("txn-1"), OldProducerID: -1, OldProducerEpoch: -1,
		ProducerID: 1 << 40, ProducerEpoch: 3}
	var key, val []byte
	enc := NewEncoder(EncoderOptions{Host: "b3"})
	enc.InitProducerID(init, func(k, v []byte) { key, val = append(key, k...), append(val, v...) })
	rec, err := Decode(val)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kind != KindInitProducerID || rec.InitProducerID == nil {
		t.Fatalf("record %+v", rec)
	}
	rec.InitProducerID.Conn = coord
	if !reflect.DeepEqual(rec.InitProducerID, init) {
		t.Errorf("got  %+v\nwant %+v", rec.InitProducerID, init)
	}
	if string(key) != "10.0.0.1|app" {
		t.Errorf("key %q", key)
	}
	// An idempotent producer's InitProducerId (no transactional.id) and a
	// failed one are not published: detect reads neither.
	n := 0
	for _, x := range []decode.InitProducerID{{Conn: coord, ProducerID: 5}, {Conn: coord, TransactionalID: strp("t"), ErrorCode: 53, ProducerID: -1}} {
		enc.InitProducerID(&x, func(_, _ []byte) { n++ })
	}
	if n != 0 {
		t.Errorf("%d records of InitProducerIds detect does not read", n)
	}
	t.Logf("EndTxn %d bytes, InitProducerId %d bytes", len(AppendEndTxn(nil, Header{Host: "b3", At: t0}, ends[0])), len(val))
}

func TestKey(t *testing.T) {
	for _, tt := range []struct {
		client string
		id     *string
		want   string
	}{
		{"10.0.0.1:5000", strp("app"), "10.0.0.1|app"},
		{"[::ffff:10.0.0.1]:5001", strp("app"), "10.0.0.1|app"},
		{"[2001:db8::2]:1", nil, "2001:db8::2|"},
	} {
		if got := string(Key(netip.MustParseAddrPort(tt.client), tt.id)); got != tt.want {
			t.Errorf("Key(%s) = %q, want %q", tt.client, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(AppendAttempt(nil, Header{Host: "h", At: time.Unix(1, 0)}, sampleExchange(true), true, func(int) bool { return true }))
	f.Add(AppendAttempt(nil, Header{Host: "h", At: time.Unix(1, 0)}, sampleExchange(false), false, nil))
	f.Add(AppendConnEnd(nil, Header{Host: "h"}, &decode.ConnInfo{ID: 1}, decode.ConnEnd{How: decode.EndFIN}))
	f.Add(AppendEndTxn(nil, Header{Host: "h", At: time.Unix(1, 0)}, &decode.EndTxn{ClientID: strp("c"), TransactionalID: "t",
		ProducerID: 3, Responded: true, ResponseTime: time.Unix(1, 0), BumpedEpoch: 1}))
	f.Add(AppendInitProducerID(nil, Header{Host: "h", At: time.Unix(1, 0)}, &decode.InitProducerID{TransactionalID: strp("t"),
		RequestTime: time.Unix(1, 0), ResponseTime: time.Unix(1, 0), ProducerID: 3}))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes encodes to bytes that decode alike.
		var again []byte
		switch rec.Kind {
		case KindAttempt:
			x := rec.Exchange
			x.Conn = &rec.Conn
			full := func(i int) bool { return x.Batches[i].Records != nil || len(x.Batches[i].RecordPrints()) > 0 }
			again = AppendAttempt(nil, rec.Header, x, rec.Details, full)
		case KindEndTxn:
			rec.EndTxn.Conn = &rec.Conn
			again = AppendEndTxn(nil, rec.Header, rec.EndTxn)
		case KindInitProducerID:
			rec.InitProducerID.Conn = &rec.Conn
			again = AppendInitProducerID(nil, rec.Header, rec.InitProducerID)
		default:
			again = AppendConnEnd(nil, rec.Header, &rec.Conn, rec.End)
		}
		rec2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if rec2.Kind != rec.Kind || rec2.Header != rec.Header || rec2.ConnID != rec.ConnID {
			t.Fatalf("round trip: %+v != %+v", rec2.Header, rec.Header)
		}
	})
}

// TestSmallestBatches: batches with every field at its shortest take
// minBatchBytes each, and a record of many of them decodes (a bound of 30
// bytes a batch refused it: found by FuzzDecode).
func TestSmallestBatches(t *testing.T) {
	h := Header{Host: "h", At: time.Unix(1, 0)}
	x := &decode.Exchange{Conn: &decode.ConnInfo{ID: 1}, RequestTime: h.At, NoResponse: decode.NoResponseClosed}
	size := func(n int) int {
		x.Batches = make([]decode.Batch, n)
		return len(AppendAttempt(nil, h, x, false, nil))
	}
	if got := size(2) - size(1); got != minBatchBytes {
		t.Errorf("the smallest batch takes %d bytes, minBatchBytes is %d", got, minBatchBytes)
	}
	for _, n := range []int{1, 4, 100} {
		x.Batches = make([]decode.Batch, n)
		rec, err := Decode(AppendAttempt(nil, h, x, false, nil))
		if err != nil {
			t.Fatalf("%d smallest batches: %v", n, err)
		}
		if len(rec.Exchange.Batches) != n {
			t.Errorf("%d smallest batches decode as %d", n, len(rec.Exchange.Batches))
		}
	}
}
