package decode

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	client = netip.MustParseAddrPort("10.0.0.1:55000")
	broker = netip.MustParseAddrPort("10.0.0.4:9092")
	t0     = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
)

// sink collects exchanges.
type sink struct{ xs []*Exchange }

func (s *sink) Produce(x *Exchange) { s.xs = append(s.xs, x) }

// msg is one frame of a scripted connection.
type msg struct {
	fromClient bool
	frame      []byte
	gap        bool // a Gap of len(frame) bytes instead of data
}

// requestFrame frames r with header v1/v2 as clients do.
func requestFrame(r kmsg.Request, corr int32, clientID string) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, r, corr)
}

// responseFrame frames r as a broker does (kfake's client_conn.go).
func responseFrame(r kmsg.Response, corr int32) []byte {
	buf := []byte{0, 0, 0, 0, 0, 0, 0, 0}
	if r.IsFlexible() && r.Key() != 18 {
		buf = append(buf, 0)
	}
	buf = r.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	return buf
}

// recordBatch builds a RecordBatch with n records of opaque bytes and a
// correct CRC-32C.
func recordBatch(producerID int64, epoch int16, seq, n int32, payload string) []byte {
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: n - 1,
		FirstTimestamp:  1700000000000,
		MaxTimestamp:    1700000000000 + int64(n),
		ProducerID:      producerID,
		ProducerEpoch:   epoch,
		FirstSequence:   seq,
		NumRecords:      n,
		Records:         []byte(payload),
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}

// legacySet builds a message set of n messages of the given magic with
// offsets from offset.
func legacySet(magic int8, offset int64, n int, payload string) []byte {
	return legacySetAt(magic, offset, n, payload, 1700000000000)
}

// legacySetAt is legacySet with magic 1 timestamps from ts (Unix ms) on.
func legacySetAt(magic int8, offset int64, n int, payload string, ts int64) []byte {
	var out []byte
	for i := range n {
		var body []byte
		body = append(body, 0, 0, 0, 0) // crc
		body = append(body, byte(magic), 0)
		if magic == 1 {
			body = kbin.AppendInt64(body, ts+int64(i))
		}
		body = kbin.AppendNullableBytes(body, nil)
		body = kbin.AppendNullableBytes(body, []byte(payload))
		binary.BigEndian.PutUint32(body, crc32.ChecksumIEEE(body[4:]))
		out = kbin.AppendInt64(out, offset+int64(i))
		out = kbin.AppendInt32(out, int32(len(body)))
		out = append(out, body...)
	}
	return out
}

// topicID returns a fixed non-zero topic ID for name.
func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	id[15] = 1
	return id
}

// part names one partition of a produce request.
type part struct {
	topic     string
	partition int32
	records   []byte
}

// produceRequest builds a ProduceRequest of version v.
func produceRequest(v int16, acks int16, parts ...part) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version = v
	r.Acks = acks
	r.TimeoutMillis = 5000
	if v >= 3 {
		r.TransactionID = nil
	}
	for _, p := range parts {
		var t *kmsg.ProduceRequestTopic
		for i := range r.Topics {
			if r.Topics[i].Topic == p.topic {
				t = &r.Topics[i]
			}
		}
		if t == nil {
			r.Topics = append(r.Topics, kmsg.ProduceRequestTopic{Topic: p.topic})
			t = &r.Topics[len(r.Topics)-1]
			if v >= 13 {
				t.TopicID = topicID(p.topic)
			}
		}
		t.Partitions = append(t.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p.partition, Records: p.records})
	}
	return r
}

// answer is one partition's answer in a produce response.
type answer struct {
	topic      string
	partition  int32
	errorCode  int16
	baseOffset int64
}

// produceResponse builds a ProduceResponse of version v.
func produceResponse(v int16, answers ...answer) *kmsg.ProduceResponse {
	r := kmsg.NewPtrProduceResponse()
	r.Version = v
	r.ThrottleMillis = 3
	for _, a := range answers {
		var t *kmsg.ProduceResponseTopic
		for i := range r.Topics {
			if r.Topics[i].Topic == a.topic {
				t = &r.Topics[i]
			}
		}
		if t == nil {
			r.Topics = append(r.Topics, kmsg.ProduceResponseTopic{Topic: a.topic})
			t = &r.Topics[len(r.Topics)-1]
			if v >= 13 {
				t.TopicID = topicID(a.topic)
			}
		}
		p := kmsg.NewProduceResponseTopicPartition()
		p.Partition = a.partition
		p.ErrorCode = a.errorCode
		p.BaseOffset = a.baseOffset
		p.LogStartOffset = 7
		if v >= 8 && a.errorCode != 0 {
			p.ErrorMessage = kmsg.StringPtr("boom")
		}
		t.Partitions = append(t.Partitions, p)
	}
	return r
}

// metadataResponse builds a Metadata v12 response naming topics by ID.
func metadataResponse(topics ...string) *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataResponse()
	r.Version = 12
	for _, name := range topics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(name)
		t.TopicID = topicID(name)
		r.Topics = append(r.Topics, t)
	}
	return r
}

// feed delivers script to a new connection of d, each frame cut into pieces
// by split, one Data call per piece; packet times advance by a millisecond
// per frame. It closes the connection unless open.
func feed(d *Decoder, script []msg, split func([]byte) [][]byte, open bool) *Conn {
	c := d.NewStream(client, broker, t0)
	if c == nil {
		return nil
	}
	for i, m := range script {
		ts := t0.Add(time.Duration(i) * time.Millisecond)
		if m.gap {
			c.Gap(m.fromClient, len(m.frame), ts)
			continue
		}
		for _, p := range split(m.frame) {
			if !c.Data(m.fromClient, p, ts) {
				break
			}
		}
	}
	if !open {
		c.Close(t0.Add(time.Hour))
	}
	return c
}

// whole is the split that delivers each frame in one call.
func whole(b []byte) [][]byte { return [][]byte{b} }

// bytewise delivers a frame one byte per call.
func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// cutAt delivers a frame in two calls, cut at k (clamped).
func cutAt(k int) func([]byte) [][]byte {
	return func(b []byte) [][]byte {
		k := min(k, len(b))
		return [][]byte{b[:k], b[k:]}
	}
}

// decodeScript runs script through a fresh Decoder and returns its
// exchanges and stats.
func decodeScript(opts Options, script []msg, split func([]byte) [][]byte) ([]*Exchange, Stats, *Decoder) {
	var s sink
	d := New(&s, opts)
	feed(d, script, split, false)
	return s.xs, d.Stats(), d
}
