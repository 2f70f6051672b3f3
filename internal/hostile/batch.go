package hostile

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record batch attribute codecs.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecZstd   = 4
)

// batchHeaderLen is a RecordBatch v2 header: everything before the records.
const batchHeaderLen = 61

// crcFrom is where the bytes a batch's CRC-32C covers begin (attributes).
const crcFrom = 21

// batchHead is what a RecordBatch v2 header says besides its length and
// CRC.
type batchHead struct {
	producerID int64
	epoch      int16
	seq        int32
	attrs      int16
	numRecords int32
	lastDelta  int32
	firstTS    int64
	maxTS      int64
}

// notIdempotent is the head of a batch of a producer that is not
// idempotent, with n records at time ts (ms).
func notIdempotent(n int32, ts int64) batchHead {
	return batchHead{producerID: -1, epoch: -1, seq: -1, numRecords: n, lastDelta: n - 1, firstTS: ts, maxTS: ts}
}

// appendHeader appends the 61-byte header, built by kmsg, of a batch whose
// records are n bytes; its CRC is left 0.
func (h batchHead) appendHeader(dst []byte, n int64) []byte {
	rb := kmsg.RecordBatch{
		Length:               int32(49 + n),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           h.attrs,
		LastOffsetDelta:      h.lastDelta,
		FirstTimestamp:       h.firstTS,
		MaxTimestamp:         h.maxTS,
		ProducerID:           h.producerID,
		ProducerEpoch:        h.epoch,
		FirstSequence:        h.seq,
		NumRecords:           h.numRecords,
	}
	return rb.AppendTo(dst)
}

// batch returns a whole batch of records (encoded, compressed or not)
// held in memory, its CRC-32C set.
func (h batchHead) batch(records []byte) []byte {
	out := h.appendHeader(make([]byte, 0, batchHeaderLen+len(records)), int64(len(records)))
	out = append(out, records...)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[crcFrom:], castagnoli))
	return out
}

// stream returns a batch whose records are streamed from mk, which must
// give the same bytes on every call: it is read once for the CRC-32C and
// once for the bytes. scratch is a buffer for the first pass.
func (h batchHead) stream(mk func() source, scratch []byte) source {
	hdr := h.appendHeader(nil, mk().left())
	crc, _ := crcOf(crc32.Update(0, castagnoli, hdr[crcFrom:]), mk(), scratch)
	binary.BigEndian.PutUint32(hdr[17:], crc)
	return chain(&bytesSrc{b: hdr}, mk())
}

// unchecked returns a batch whose records are streamed from records with
// the CRC field set to crc, not computed: for frames that never complete.
func (h batchHead) unchecked(records source, crc uint32) source {
	hdr := h.appendHeader(nil, records.left())
	binary.BigEndian.PutUint32(hdr[17:], crc)
	return chain(&bytesSrc{b: hdr}, records)
}

// recordWriter encodes records with kmsg, reusing one scratch buffer.
type recordWriter struct{ scratch []byte }

// append appends one record (its length varint first) to dst.
func (w *recordWriter) append(dst []byte, delta int32, tsDelta int64, key, value []byte) []byte {
	r := kmsg.Record{TimestampDelta64: tsDelta, OffsetDelta: delta, Key: key, Value: value}
	// kmsg writes Length as given: encode with 0 (one byte) and measure.
	w.scratch = r.AppendTo(w.scratch[:0])
	body := w.scratch[1:]
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

// forgeCRC sets the four bytes b[at:at+4] so that the CRC-32C of b[from:]
// is want. CRC-32C is affine in its input: flipping input bit i flips a
// fixed set of CRC bits (col[i]) whatever the other bytes, so the flips
// that turn the CRC into want solve a 32x32 system over GF(2), which is
// invertible for any 32 consecutive input bits.
func forgeCRC(b []byte, from, at int, want uint32) error {
	clear(b[at : at+4])
	base := crc32.Checksum(b[from:], castagnoli)
	// basis[p] reduces vectors whose highest set bit is p; combo says
	// which input bits make it.
	var basis, combo [32]uint32
	for i := range 32 {
		b[at+i/8] ^= 1 << (i % 8)
		v := crc32.Checksum(b[from:], castagnoli) ^ base
		b[at+i/8] ^= 1 << (i % 8)
		c := uint32(1) << i
		for p := 31; p >= 0 && v != 0; p-- {
			if v&(1<<p) == 0 {
				continue
			}
			if basis[p] == 0 {
				basis[p], combo[p] = v, c
				v = 0
				break
			}
			v ^= basis[p]
			c ^= combo[p]
		}
	}
	t, x := base^want, uint32(0)
	for p := 31; p >= 0; p-- {
		if t&(1<<p) == 0 {
			continue
		}
		if basis[p] == 0 {
			return errors.New("crc forge: singular system")
		}
		t ^= basis[p]
		x ^= combo[p]
	}
	for i := range 32 {
		if x&(1<<i) != 0 {
			b[at+i/8] ^= 1 << (i % 8)
		}
	}
	if crc32.Checksum(b[from:], castagnoli) != want {
		return errors.New("crc forge: result does not match")
	}
	return nil
}

// legacyMessage appends a magic 1 message (offset, size, IEEE CRC, magic,
// attributes, timestamp, null key, value): the message sets of Produce v0-v2.
func legacyMessage(dst []byte, offset int64, attrs int8, ts int64, value []byte) []byte {
	be := binary.BigEndian
	dst = be.AppendUint64(dst, uint64(offset))
	sizeAt := len(dst)
	dst = be.AppendUint32(dst, 0)
	crcAt := len(dst)
	dst = be.AppendUint32(dst, 0)
	dst = append(dst, 1, byte(attrs))
	dst = be.AppendUint64(dst, uint64(ts))
	dst = be.AppendUint32(dst, 0xffffffff) // null key
	dst = be.AppendUint32(dst, uint32(len(value)))
	dst = append(dst, value...)
	be.PutUint32(dst[sizeAt:], uint32(len(dst)-crcAt))
	be.PutUint32(dst[crcAt:], crc32.ChecksumIEEE(dst[crcAt+4:]))
	return dst
}

// varintLen is the length of v as a zigzag varint.
func varintLen(v int64) int64 {
	var b [binary.MaxVarintLen64]byte
	return int64(len(binary.AppendVarint(b[:0], v)))
}

// recordLen is the encoded length (its length varint included) of a
// record with offset delta delta, timestamp delta 0, a null key, a value of
// valueLen bytes and no headers, as recordWriter.append writes it.
func recordLen(delta int32, valueLen int) int64 {
	body := 1 + varintLen(0) + varintLen(int64(delta)) + varintLen(-1) +
		varintLen(int64(valueLen)) + int64(valueLen) + varintLen(0)
	return varintLen(body) + body
}

// recordsSize is the encoded length of count records of valueLen bytes.
func recordsSize(count int32, valueLen int) int64 {
	var n int64
	for i := range count {
		n += recordLen(i, valueLen)
	}
	return n
}

// countedRecords returns a factory of the same stream of count records
// every call: record i has a null key and a value of valueLen bytes, its
// first bytes (up to 8) the big-endian low bytes of base+i, the rest
// pattern's (repeated). Records are made 64 at a time.
func countedRecords(count int32, valueLen int, base uint64, pattern []byte) func() source {
	total := recordsSize(count, valueLen)
	return func() source {
		var i int32
		var rw recordWriter
		val := make([]byte, valueLen)
		for j := 8; j < valueLen; j++ {
			val[j] = pattern[j%len(pattern)]
		}
		var ctr [8]byte
		head := min(8, valueLen)
		return &genSrc{n: total, next: func(dst []byte) []byte {
			for k := 0; k < 64 && i < count; k++ {
				binary.BigEndian.PutUint64(ctr[:], base+uint64(i))
				copy(val[:head], ctr[8-head:])
				dst = rw.append(dst, i, 0, nil, val)
				i++
			}
			return dst
		}}
	}
}
