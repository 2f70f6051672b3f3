package decode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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
	xs, st, _ := decodeStreamsHeld(opts, fromClient, fromBroker, split)
	return xs, st
}

// decodeStreamsHeld is decodeStreams that also says how many bytes an
// unsynced direction still held as a candidate frame start when the
// connection closed: bytes never decoded, like those Stats.DroppedBytes
// counts, but not counted there. A run whose last candidate waited for more
// bytes (cut into small pieces) holds what a run that judged it at once
// dropped.
func decodeStreamsHeld(opts Options, fromClient, fromBroker []byte, split func([]byte) [][]byte) ([]*Exchange, Stats, int64) {
	var s sink
	d := New(&s, opts)
	c := d.NewStream(client, broker, t0)
	if c == nil {
		return nil, d.Stats(), 0
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
	var held, buffered int64
	for _, dir := range c.dirs {
		if !dir.synced {
			held += int64(len(dir.buf))
		}
		buffered += int64(cap(dir.buf))
	}
	// The bound on partial frames counts every buffer, and only those.
	if d.BufferedFrameBytes() != buffered {
		panic(fmt.Sprintf("decoder counts %d bytes of partial frames, its buffers hold %d", d.BufferedFrameBytes(), buffered))
	}
	c.Close(t0)
	if d.BufferedFrameBytes() != 0 {
		panic(fmt.Sprintf("decoder counts %d bytes of partial frames after the close", d.BufferedFrameBytes()))
	}
	return s.xs, d.Stats(), held
}

var noResponseReasons = map[NoResponse]bool{
	NoResponseAcks0: true, NoResponseClosed: true, NoResponseBytesLost: true,
	NoResponseLaterSeen: true, NoResponseMalformed: true, NoResponseEvicted: true,
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
// both runs dropped as many bytes to find frame boundaries (none, or all of
// random bytes; a candidate still held at the close counts as dropped),
// the same bytes cut differently give the same exchanges and counts. Of
// 20,000 inputs mutated from the seeds, 69% are compared so; only 17% were
// when a run that dropped a byte was passed over (and almost none of the
// fuzzer's own inputs, which are mostly junk).
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
		want, wantStats, wantHeld := decodeStreamsHeld(opts, fromClient, fromBroker, whole)
		wantStats.DroppedBytes += wantHeld
		checkExchanges(t, want)
		splits := []func([]byte) [][]byte{cutAt(int(cut)), cutAt(int(cut) / 3)}
		if len(fromClient)+len(fromBroker) < 4096 {
			splits = append(splits, bytewise)
		}
		for i, split := range splits {
			got, st, held := decodeStreamsHeld(opts, fromClient, fromBroker, split)
			st.DroppedBytes += held
			checkExchanges(t, got)
			if st.DroppedBytes != wantStats.DroppedBytes || st.Resyncs != wantStats.Resyncs {
				// An unsynced direction looks for a frame start where a
				// segment starts, so runs cut differently may drop
				// different bytes; when both dropped as much (random
				// bytes: all of them), they must agree.
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
// fuzzer-chosen version: what kmsg parses makes one exchange whose fields
// and batches are those kmsg reads (checkAgainstKmsg), and re-encodes to
// bytes that parse equal, of which decode makes the same exchange; what
// kmsg refuses, or announces more topics than its bytes hold as real ones,
// makes no exchange.
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
		if perr := plausibleProduceRequest(body, v); perr != nil {
			// More topics or partitions than real ones would fit: refused
			// before kmsg allocates them, though kmsg takes empty ones.
			if len(xs) != 0 {
				t.Fatalf("topics count refused (%v) but decode made %d exchanges", perr, len(xs))
			}
			return
		}
		if len(xs) != 1 {
			t.Fatalf("kmsg parsed the body, decode made %d exchanges", len(xs))
		}
		checkAgainstKmsg(t, xs[0], &r1)
		enc := r1.AppendTo(nil)
		var r2 kmsg.ProduceRequest
		r2.Version = v
		if err := r2.ReadFrom(enc); err != nil {
			t.Fatalf("re-encoded body does not parse: %v", err)
		}
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("re-encoded body parses differently:\n%+v\n%+v", r1, r2)
		}
		if plausibleProduceRequest(enc, v) != nil {
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

// checkAgainstKmsg compares the exchange decode made of a ProduceRequest
// body with what kmsg parsed of the same body (req): the request's fields,
// and every batch's header fields as kmsg's RecordBatch and MessageV0/V1
// read them (the fingerprint, decode's own, aside).
func checkAgainstKmsg(t *testing.T, x *Exchange, req *kmsg.ProduceRequest) {
	t.Helper()
	wantNo := NoResponseClosed
	if req.Acks == 0 {
		wantNo = NoResponseAcks0
	}
	if x.Version != req.Version || x.CorrelationID != 1 || x.ClientID == nil || *x.ClientID != "fuzz" ||
		x.Acks != req.Acks || x.TimeoutMillis != req.TimeoutMillis || x.NoResponse != wantNo ||
		!reflect.DeepEqual(x.TransactionalID, req.TransactionID) {
		t.Fatalf("exchange v%d corr %d client %v acks %d timeout %d txn %v (%q); kmsg: v%d acks %d timeout %d txn %v",
			x.Version, x.CorrelationID, x.ClientID, x.Acks, x.TimeoutMillis, x.TransactionalID, x.NoResponse,
			req.Version, req.Acks, req.TimeoutMillis, req.TransactionID)
	}
	var want []Batch
	for _, tp := range req.Topics {
		topic, id := tp.Topic, [16]byte{}
		if req.Version >= 13 {
			topic, id = "", tp.TopicID
		}
		for _, p := range tp.Partitions {
			bs, comparable := kmsgBatches(p.Records)
			for i := range bs {
				bs[i].Topic, bs[i].TopicID, bs[i].Partition = topic, id, p.Partition
			}
			if !comparable {
				// kmsg refused a legacy message decode walks by its size
				// alone (it reads no key or value): compare up to there,
				// then stop.
				n := min(len(want)+len(bs), len(x.Batches))
				checkBatches(t, x.Batches[:n], append(want, bs...)[:n])
				return
			}
			want = append(want, bs...)
		}
	}
	checkBatches(t, x.Batches, want)
}

func checkBatches(t *testing.T, got, want []Batch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d batches, kmsg reads %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range got {
		g := got[i]
		g.Hash = 0
		if !reflect.DeepEqual(g, want[i]) {
			t.Fatalf("batch %d:\n got %+v\nkmsg %+v", i, g, want[i])
		}
	}
}

// kmsgBatches reads a partition's Records bytes with kmsg as decode's
// walk is documented (batch.go): one Batch per RecordBatch, its length
// from batchLength; one per run of legacy messages up to the next
// RecordBatch; a batch that is cut short, too small or of an unknown magic
// ends the partition, a legacy run with it. comparable is false when kmsg
// refuses a legacy message whose size decode accepts.
func kmsgBatches(records []byte) (out []Batch, comparable bool) {
	be := binary.BigEndian
	for off := 0; off < len(records); {
		b := records[off:]
		if len(b) < 17 {
			return out, true
		}
		switch b[16] {
		case 2:
			n := 12 + int(int32(be.Uint32(b[8:])))
			if len(b) < 61 || n < 61 || n > len(b) {
				return out, true
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b[:n]); err != nil {
				return out, true
			}
			out = append(out, Batch{Magic: rb.Magic, CRC: uint32(rb.CRC), Attributes: rb.Attributes,
				LastOffsetDelta: rb.LastOffsetDelta, FirstTimestamp: rb.FirstTimestamp, MaxTimestamp: rb.MaxTimestamp,
				ProducerID: rb.ProducerID, ProducerEpoch: rb.ProducerEpoch, FirstSequence: rb.FirstSequence,
				NumRecords: rb.NumRecords, Length: n,
				Corrupt: crc32.Checksum(b[21:n], crc32.MakeTable(crc32.Castagnoli)) != uint32(rb.CRC)})
			off += n
		case 0, 1:
			set := Batch{Magic: int8(b[16]), FirstTimestamp: -1, MaxTimestamp: -1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}
			k := 0
			for k < len(b) {
				m := b[k:]
				if len(m) < 17 {
					return out, true
				}
				if m[16] == 2 {
					break
				}
				if m[16] > 1 {
					return out, true
				}
				size := int(int32(be.Uint32(m[8:])))
				least := 14
				if m[16] == 1 {
					least = 22
				}
				if size < least || 12+size > len(m) {
					return out, true
				}
				var crc uint32
				var attrs int8
				switch m[16] {
				case 0:
					var msg kmsg.MessageV0
					if msg.ReadFrom(m[:12+size]) != nil {
						return out, false
					}
					crc, attrs = uint32(msg.CRC), msg.Attributes
				case 1:
					var msg kmsg.MessageV1
					if msg.ReadFrom(m[:12+size]) != nil {
						return out, false
					}
					crc, attrs = uint32(msg.CRC), msg.Attributes
					if set.NumRecords == 0 {
						set.FirstTimestamp = msg.Timestamp
					}
					set.MaxTimestamp = max(set.MaxTimestamp, msg.Timestamp)
				}
				if set.NumRecords == 0 {
					set.CRC, set.Attributes = crc, int16(attrs)
				}
				if crc32.ChecksumIEEE(m[16:12+size]) != crc {
					set.Corrupt = true
				}
				set.NumRecords++
				k += 12 + size
			}
			set.LastOffsetDelta, set.Length = set.NumRecords-1, k
			out = append(out, set)
			off += k
		default:
			return out, true
		}
	}
	return out, true
}
