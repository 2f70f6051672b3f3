package gencap

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record batch shape limits.
const (
	minRecords    = 1
	maxRecords    = 50
	minValueBytes = 100
	maxValueBytes = 1000
)

// words make record values look like JSON text, so that the codecs have
// something to compress, at one random draw per word.
var words = [...]string{
	"order", "payment", "click", "view", "user", "session", "cart", "item",
	"price", "amount", "currency", "EUR", "USD", "status", "created", "updated",
	"shipped", "pending", "failed", "ok", "region", "eu-west-1", "us-east-1",
	"device", "mobile", "desktop", "tablet", "referrer", "search", "campaign",
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
	"quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
	"xray", "yankee", "zulu", "true", "false", "null", "0", "1", "42",
	"1000", "31337",
}

// batchSpec is what a record batch is made of.
type batchSpec struct {
	codec         Codec
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	records       int32
	timestampMs   int64
	withKeys      bool
}

// batchBuilder builds RecordBatch v2 bytes with kmsg; it reuses its scratch
// buffers, and every batch it returns is a new slice.
type batchBuilder struct {
	rng      *rand.Rand
	comp     *compressor
	records  []byte
	value    []byte
	rec      []byte
	seq      int64
	maxValue int // Config.MaxValueBytes
}

// value fills b.value with n bytes of JSON-like text.
func (b *batchBuilder) fillValue(n int) []byte {
	v := b.value[:0]
	b.seq++
	v = append(v, `{"seq":`...)
	v = strconv.AppendInt(v, b.seq, 10)
	v = append(v, `,"text":"`...)
	for len(v) < n {
		v = append(v, words[b.rng.IntN(len(words))]...)
		v = append(v, ' ')
	}
	v = v[:n-2]
	v = append(v, `"}`...)
	b.value = v
	return v
}

// build returns the batch's wire bytes (header included), with lengths and
// CRC-32C set.
func (b *batchBuilder) build(s batchSpec) ([]byte, error) {
	b.records = b.records[:0]
	var maxDelta int64
	for i := int32(0); i < s.records; i++ {
		delta := int64(i) * int64(b.rng.IntN(3))
		maxDelta = max(maxDelta, delta)
		r := kmsg.Record{
			TimestampDelta64: delta,
			OffsetDelta:      i,
			Value:            b.fillValue(minValueBytes + b.rng.IntN(b.maxValue-minValueBytes+1)),
		}
		if s.withKeys {
			r.Key = strconv.AppendInt(nil, int64(b.rng.IntN(10000)), 10)
		}
		// Length is everything after the varint length itself: encode
		// with length 0 (one varint byte) and measure.
		b.rec = r.AppendTo(b.rec[:0])
		body := b.rec[1:]
		b.records = binary.AppendVarint(b.records, int64(len(body)))
		b.records = append(b.records, body...)
	}
	records, err := b.comp.compress(s.codec, b.records)
	if err != nil {
		return nil, err
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(s.codec),
		LastOffsetDelta:      s.records - 1,
		FirstTimestamp:       s.timestampMs,
		MaxTimestamp:         s.timestampMs + maxDelta,
		ProducerID:           s.producerID,
		ProducerEpoch:        s.producerEpoch,
		FirstSequence:        s.baseSequence,
		NumRecords:           s.records,
		Records:              records,
	}
	rb.Length = int32(49 + len(records))
	out := rb.AppendTo(make([]byte, 0, 61+len(records)))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], castagnoli))
	return out, nil
}
