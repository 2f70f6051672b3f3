package decode

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streams concatenates a script's frames per direction.
func streams(script []msg) (fromClient, fromBroker []byte) {
	for _, m := range script {
		if m.fromClient {
			fromClient = append(fromClient, m.frame...)
		} else {
			fromBroker = append(fromBroker, m.frame...)
		}
	}
	return fromClient, fromBroker
}

// seedStreams returns the client and broker bytes of a seed capture.
func seedStreams(tb testing.TB, name string) (fromClient, fromBroker []byte) {
	segs := readSeed(tb, name)
	for _, s := range segs {
		if s.src == segs[0].src {
			fromClient = append(fromClient, s.payload...)
		} else {
			fromBroker = append(fromBroker, s.payload...)
		}
	}
	return fromClient, fromBroker
}

// decodeStreams delivers the client bytes, then the broker bytes, each cut
// into pieces by split, and closes the connection.
func decodeStreams(opts Options, fromClient, fromBroker []byte, split func([]byte) [][]byte) ([]*Exchange, Stats) {
	var s sink
	d := New(&s, opts)
	c := d.NewStream(client, broker, t0)
	if c == nil {
		return nil, d.Stats()
	}
	deliver := func(fromA bool, b []byte) {
		for _, p := range split(b) {
			if !c.Data(fromA, p, t0) {
				return
			}
		}
	}
	deliver(true, fromClient)
	deliver(false, fromBroker)
	c.Close(t0)
	return s.xs, d.Stats()
}

var noResponseReasons = map[string]bool{
	"acks=0": true, "connection closed": true, "bytes lost": true,
	"later response seen": true, "response malformed": true, "evicted": true,
}

// checkExchanges asserts what holds of any exchange decode emits.
func checkExchanges(t *testing.T, xs []*Exchange) {
	t.Helper()
	for _, x := range xs {
		if x.Conn == nil || x.Conn.ID == 0 {
			t.Fatalf("exchange without connection: %+v", x)
		}
		if x.Responded == (x.NoResponse != "") || (!x.Responded && !noResponseReasons[x.NoResponse]) {
			t.Fatalf("responded %v, no response %q", x.Responded, x.NoResponse)
		}
		if x.Acks == 0 && x.Responded {
			t.Fatal("acks=0 request answered")
		}
		for _, b := range x.Batches {
			if b.Length <= 0 || (b.Response != nil && !x.Responded) {
				t.Fatalf("batch %+v", b)
			}
		}
	}
}

// FuzzConn feeds arbitrary bytes as both directions of a connection, whole
// and cut at fuzzer-chosen points: decode must not panic, and as long as
// neither run had to drop bytes to find frame boundaries, the same bytes
// cut differently give the same exchanges and counts.
func FuzzConn(f *testing.F) {
	for _, name := range []string{"seed-nonidempotent-retry.pcap", "seed-idempotent-retry.pcap"} {
		c, b := seedStreams(f, name)
		f.Add(c, b, uint16(7), false)
		f.Add(c, b, uint16(200), true)
	}
	for _, v := range []int16{0, 2, 3, 8, 9, 13} {
		c, b := streams(versionScript(v, 5))
		f.Add(c, b, uint16(v*11), v%2 == 0)
	}
	c, b := streams([]msg{produceMsg(1), produceMsg(2), answerMsg(2), answerMsg(1)})
	f.Add(c, b, uint16(50), false)
	f.Fuzz(func(t *testing.T, fromClient, fromBroker []byte, cut uint16, sniff bool) {
		opts := Options{MaxFrameBytes: 1 << 20}
		if sniff {
			opts.Sniff = true
			opts.Ports = []uint16{1}
		}
		want, wantStats := decodeStreams(opts, fromClient, fromBroker, whole)
		checkExchanges(t, want)
		splits := []func([]byte) [][]byte{cutAt(int(cut)), cutAt(int(cut) / 3)}
		if len(fromClient)+len(fromBroker) < 4096 {
			splits = append(splits, bytewise)
		}
		for i, split := range splits {
			got, st := decodeStreams(opts, fromClient, fromBroker, split)
			checkExchanges(t, got)
			if wantStats.DroppedBytes != 0 || st.DroppedBytes != 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("split %d: %d exchanges, whole: %d", i, len(got), len(want))
			}
			if st != wantStats {
				t.Fatalf("split %d: stats %+v, whole %+v", i, st, wantStats)
			}
		}
	})
}

// produceFrame frames body as a ProduceRequest of version v.
func produceFrame(v int16, body []byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, 0)
	b = kbin.AppendInt16(b, v)
	b = kbin.AppendInt32(b, 1)
	b = kbin.AppendNullableString(b, kmsg.StringPtr("fuzz"))
	if v >= 9 {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// FuzzProduceRequest takes bytes as a ProduceRequest body of a
// fuzzer-chosen version: what kmsg parses re-encodes to bytes that parse
// equal, and decode makes the same exchange of both; what kmsg refuses, or
// announces more topics than its bytes hold as real ones, makes no
// exchange.
func FuzzProduceRequest(f *testing.F) {
	for v := int16(0); v <= 13; v++ {
		frame := versionScript(v, 1)[0].frame
		h, err := New(nil, Options{}).parseRequestHeader(frame[4:], true)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(v), frame[4+h.size:])
	}
	for _, name := range []string{"seed-nonidempotent-retry.pcap", "seed-idempotent-retry.pcap"} {
		c, _ := seedStreams(f, name)
		f.Add(uint8(9), c[4+2+2+4+2+len("rdkafka")+1:])
	}
	f.Fuzz(func(t *testing.T, version uint8, body []byte) {
		v := int16(version % 14)
		var r1 kmsg.ProduceRequest
		r1.Version = v
		err := r1.ReadFrom(body)
		xs, _ := decodeStreams(Options{}, produceFrame(v, body), nil, whole)
		if err != nil {
			if len(xs) != 0 {
				t.Fatalf("kmsg refused the body (%v) but decode made %d exchanges", err, len(xs))
			}
			return
		}
		if perr := plausibleTopics(produceRequestTopics(body, v)); perr != nil {
			// More topics than real ones would fit: refused before kmsg
			// allocates them, though kmsg takes empty topics.
			if len(xs) != 0 {
				t.Fatalf("topics count refused (%v) but decode made %d exchanges", perr, len(xs))
			}
			return
		}
		enc := r1.AppendTo(nil)
		var r2 kmsg.ProduceRequest
		r2.Version = v
		if err := r2.ReadFrom(enc); err != nil {
			t.Fatalf("re-encoded body does not parse: %v", err)
		}
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("re-encoded body parses differently:\n%+v\n%+v", r1, r2)
		}
		if plausibleTopics(produceRequestTopics(enc, v)) != nil {
			// The topics count is judged against the bytes left, and
			// re-encoding drops trailing bytes kmsg ignored.
			return
		}
		xs2, _ := decodeStreams(Options{}, produceFrame(v, enc), nil, whole)
		if len(xs) != 1 || !reflect.DeepEqual(xs, xs2) {
			t.Fatalf("exchanges differ: %d and %d", len(xs), len(xs2))
		}
		checkExchanges(t, xs)
	})
}
