package decode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchBatch is a RecordBatch as a broker serves it: at base offset off,
// n records (payload stands in for them), CRC-32C as the producer set it.
func fetchBatch(off int64, pid int64, seq int32, n int32, payload string) []byte {
	b := kmsg.RecordBatch{FirstOffset: off, Magic: 2, LastOffsetDelta: n - 1, ProducerID: pid, ProducerEpoch: 0,
		FirstSequence: seq, NumRecords: n, Records: []byte(payload), FirstTimestamp: 1, MaxTimestamp: 1}
	b.Length = int32(49 + len(payload))
	raw := b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw
}

// fetchBody is a FetchResponse body of version v, encoded by kmsg: topic
// "orders" (ID {1}) partitions 0 and 3, the first holding two whole
// batches and the start of a third, cut short as brokers do.
func fetchBody(v int16) []byte {
	whole := append(fetchBatch(40, -1, -1, 2, "aaaa"), fetchBatch(42, 7, 5, 1, "bb")...)
	cut := fetchBatch(43, 7, 6, 1, "cccccc")
	resp := kmsg.NewFetchResponse()
	resp.Version = v
	t := kmsg.NewFetchResponseTopic()
	t.Topic, t.TopicID = "orders", [16]byte{1}
	p0 := kmsg.NewFetchResponseTopicPartition()
	p0.Partition, p0.HighWatermark = 0, 44
	p0.LastStableOffset, p0.LogStartOffset = 43, 10 // on the wire from v4 and v5
	p0.RecordBatches = append(whole, cut[:30]...)
	a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
	a.ProducerID, a.FirstOffset = 7, 42
	p0.AbortedTransactions = append(p0.AbortedTransactions, a)
	p3 := kmsg.NewFetchResponseTopicPartition()
	p3.Partition, p3.ErrorCode, p3.HighWatermark = 3, 1, -1
	t.Partitions = append(t.Partitions, p0, p3)
	resp.Topics = append(resp.Topics, t)
	return resp.AppendTo(nil)
}

func TestParseFetchResponse(t *testing.T) {
	for v := int16(0); v <= 18; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			d := New(nil, Options{})
			f := &Fetch{Version: v}
			if err := d.parseFetchResponse(f, fetchBody(v)); err != nil {
				t.Fatal(err)
			}
			if len(f.Partitions) != 2 {
				t.Fatalf("%d partitions, want 2", len(f.Partitions))
			}
			p0, p3 := f.Partitions[0], f.Partitions[1]
			wantTopic, wantID := "orders", [16]byte{}
			if v >= 13 {
				wantTopic, wantID = "", [16]byte{1}
			}
			if p0.Topic != wantTopic || p0.TopicID != wantID || p0.Partition != 0 || p0.HighWatermark != 44 ||
				p3.Partition != 3 || p3.ErrorCode != 1 || len(p3.Batches) != 0 {
				t.Fatalf("partitions %+v", f.Partitions)
			}
			wantLSO, wantStart := int64(-1), int64(-1)
			if v >= 4 {
				wantLSO = 43
			}
			if v >= 5 {
				wantStart = 10
			}
			if p0.LastStableOffset != wantLSO || p0.LogStartOffset != wantStart {
				t.Errorf("last stable offset %d, log start %d; want %d, %d", p0.LastStableOffset, p0.LogStartOffset, wantLSO, wantStart)
			}
			if len(p0.Batches) != 2 {
				t.Fatalf("%d batches, want the 2 whole ones", len(p0.Batches))
			}
			b0, b1 := p0.Batches[0], p0.Batches[1]
			if b0.BaseOffset != 40 || b0.NumRecords != 2 || b0.ProducerID != -1 ||
				b1.BaseOffset != 42 || b1.ProducerID != 7 || b1.FirstSequence != 5 || b1.NumRecords != 1 {
				t.Errorf("batches %+v", p0.Batches)
			}
			// The header is the producer's: base offset aside, the same
			// bytes give the same CRC, fields and fingerprint.
			produced, _, err := d.recordBatch(fetchBatch(0, 7, 5, 1, "bb"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b1.Batch, produced) {
				t.Errorf("fetched batch %+v, produced %+v", b1.Batch, produced)
			}
		})
	}
}

// BenchmarkFetchResponse walks a 1 MiB FetchResponse of 100 batches.
func BenchmarkFetchResponse(b *testing.B) {
	resp := kmsg.NewFetchResponse()
	resp.Version = 12
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "orders"
	p := kmsg.NewFetchResponseTopicPartition()
	for i := range 100 {
		p.RecordBatches = append(p.RecordBatches, fetchBatch(int64(i*10), -1, -1, 10, string(make([]byte, 10<<10)))...)
	}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	body := resp.AppendTo(nil)
	d := New(nil, Options{})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		f := &Fetch{Version: 12}
		if err := d.parseFetchResponse(f, body); err != nil || len(f.Partitions[0].Batches) != 100 {
			b.Fatal(err)
		}
	}
}

// TestFetchResponseRefusesCounts: counts the bytes cannot hold are refused
// before anything is allocated for them.
func TestFetchResponseRefusesCounts(t *testing.T) {
	body := []byte{0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff} // v1: throttle, then 2^31-1 topics
	d := New(nil, Options{})
	f := &Fetch{Version: 1}
	if err := d.parseFetchResponse(f, body); err == nil {
		t.Fatal("a topics count of 2^31-1 in 4 bytes was taken")
	}
}

// FuzzFetchResponse walks arbitrary FetchResponse bodies of every version.
// It must not panic; what kmsg parses the walk must take whole, and what
// it takes whole kmsg must parse too, with the same partitions (topic,
// offsets, error) and, for each RecordBatch kept, the header kmsg's
// RecordBatch reads; every batch it keeps lies whole within its partition's
// records, in order.
func FuzzFetchResponse(f *testing.F) {
	for v := int16(0); v <= 18; v++ {
		f.Add(uint8(v), fetchBody(v))
	}
	f.Fuzz(func(t *testing.T, version uint8, body []byte) {
		v := int16(version % 19)
		d := New(nil, Options{})
		fr := &Fetch{Version: v}
		err := d.parseFetchResponse(fr, body)
		resp := kmsg.FetchResponse{Version: v}
		kerr := resp.ReadFrom(body)
		if kerr == nil && err != nil {
			t.Fatalf("kmsg parses the v%d response, decode refuses it: %v", v, err)
		}
		if err != nil || kerr != nil {
			return // kmsg checks more (e.g. tag contents) than the walk needs
		}
		type kpart struct {
			topic string
			id    [16]byte
			kmsg.FetchResponseTopicPartition
		}
		var parts []kpart
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				kp := kpart{topic: t.Topic, id: t.TopicID, FetchResponseTopicPartition: p}
				if v >= 13 {
					kp.topic = ""
				} else {
					kp.id = [16]byte{}
				}
				parts = append(parts, kp)
			}
		}
		if len(parts) != len(fr.Partitions) {
			t.Fatalf("%d partitions, kmsg reads %d", len(fr.Partitions), len(parts))
		}
		for i, p := range fr.Partitions {
			k := parts[i]
			if p.Topic != k.topic || p.TopicID != k.id || p.Partition != k.Partition || p.HighWatermark != k.HighWatermark ||
				p.ErrorCode != k.ErrorCode || p.LastStableOffset != k.LastStableOffset || p.LogStartOffset != k.LogStartOffset {
				t.Fatalf("partition %d: %+v, kmsg %+v", i, p, k)
			}
			off := 0
			for j, b := range p.Batches {
				raw := k.RecordBatches[off:]
				if len(raw) < b.Length || b.Length <= 0 {
					t.Fatalf("batch of %d bytes beyond the records", b.Length)
				}
				if got := int64(binary.BigEndian.Uint64(raw)); got != b.BaseOffset {
					t.Fatalf("base offset %d, bytes say %d", b.BaseOffset, got)
				}
				if b.Magic == 2 {
					var rb kmsg.RecordBatch
					if err := rb.ReadFrom(raw[:b.Length]); err != nil {
						t.Fatalf("partition %d batch %d: kmsg refuses it: %v", i, j, err)
					}
					want := Batch{Magic: 2, CRC: uint32(rb.CRC), Attributes: rb.Attributes, LastOffsetDelta: rb.LastOffsetDelta,
						FirstTimestamp: rb.FirstTimestamp, MaxTimestamp: rb.MaxTimestamp, ProducerID: rb.ProducerID,
						ProducerEpoch: rb.ProducerEpoch, FirstSequence: rb.FirstSequence, NumRecords: rb.NumRecords,
						Length: b.Length, Corrupt: crc32.Checksum(raw[21:b.Length], crc32.MakeTable(crc32.Castagnoli)) != uint32(rb.CRC)}
					got := b.Batch // where it belongs is the partition's, set by the connection
					got.Hash, got.Topic, got.TopicID, got.Partition = 0, "", [16]byte{}, 0
					if rb.FirstOffset != b.BaseOffset || !reflect.DeepEqual(got, want) {
						t.Fatalf("partition %d batch %d at %d:\n got %+v\nkmsg %+v at %d", i, j, b.BaseOffset, got, want, rb.FirstOffset)
					}
				}
				off += b.Length
			}
		}
	})
}

// fullSink collects exchanges, fetches and transaction events.
type fullSink struct {
	sink
	fetches []*Fetch
	inits   []*InitProducerID
	ends    []*EndTxn
}

func (s *fullSink) Fetch(f *Fetch)                   { s.fetches = append(s.fetches, f) }
func (s *fullSink) InitProducerID(x *InitProducerID) { s.inits = append(s.inits, x) }
func (s *fullSink) EndTxn(x *EndTxn)                 { s.ends = append(s.ends, x) }

// TestConnFetchAndTxn decodes a scripted connection of a follower's fetch,
// a transactional producer's InitProducerId and two EndTxns (one answered,
// one cut by the close), whole and split byte by byte.
func TestConnFetchAndTxn(t *testing.T) {
	txn := "tx"
	freq := kmsg.NewPtrFetchRequest()
	freq.Version, freq.ReplicaID, freq.IsolationLevel = 11, 2, 1
	ipreq := kmsg.NewPtrInitProducerIDRequest()
	ipreq.Version, ipreq.TransactionalID = 4, &txn
	ipresp := kmsg.NewPtrInitProducerIDResponse()
	ipresp.Version, ipresp.ProducerID, ipresp.ProducerEpoch = 4, 77, 3
	end := func(commit bool) *kmsg.EndTxnRequest {
		r := kmsg.NewPtrEndTxnRequest()
		r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = 5, txn, 77, 3, commit
		return r
	}
	etresp := kmsg.NewPtrEndTxnResponse()
	etresp.Version, etresp.ProducerID, etresp.ProducerEpoch = 5, 77, 4
	fresp := fetchBody(11)
	fframe := responseFrame(kmsg.NewPtrFetchResponse(), 1)[:8] // size and correlation ID
	fframe = append(fframe, fresp...)
	binary.BigEndian.PutUint32(fframe, uint32(len(fframe)-4))
	script := []msg{
		{true, requestFrame(freq, 1, "replica"), false},
		{false, fframe, false},
		{true, requestFrame(ipreq, 2, "p"), false},
		{false, responseFrame(ipresp, 2), false},
		{true, requestFrame(end(true), 3, "p"), false},
		{false, responseFrame(etresp, 3), false},
		{true, requestFrame(end(false), 4, "p"), false},
	}
	for _, split := range []struct {
		name string
		fn   func([]byte) [][]byte
	}{{"whole", whole}, {"bytewise", bytewise}} {
		t.Run(split.name, func(t *testing.T) {
			s := &fullSink{}
			d := New(s, Options{})
			feed(d, script, split.fn, false)
			if len(s.fetches) != 1 || s.fetches[0].ReplicaID != 2 || s.fetches[0].IsolationLevel != 1 ||
				len(s.fetches[0].Partitions) != 2 || len(s.fetches[0].Partitions[0].Batches) != 2 {
				t.Fatalf("fetches %+v", s.fetches)
			}
			if b := s.fetches[0].Partitions[0].Batches[1]; b.Topic != "orders" || b.BaseOffset != 42 {
				t.Errorf("fetched batch %+v", b)
			}
			if len(s.inits) != 1 || *s.inits[0].TransactionalID != txn || s.inits[0].ProducerID != 77 || s.inits[0].ProducerEpoch != 3 {
				t.Fatalf("inits %+v", s.inits)
			}
			if len(s.ends) != 2 || !s.ends[0].Responded || !s.ends[0].Commit || s.ends[0].BumpedEpoch != 4 ||
				s.ends[1].Responded || s.ends[1].Commit || s.ends[1].TransactionalID != txn {
				t.Fatalf("ends %+v %+v", s.ends[0], s.ends[len(s.ends)-1])
			}
			if st := d.Stats(); st.FetchResponses != 1 || st.FetchedBatches != 2 || st.Malformed != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}
