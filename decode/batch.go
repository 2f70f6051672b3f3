package decode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/zeebo/xxh3"
)

// Record batches are walked without decompressing anything. The magic byte
// sits at offset 16 in both formats:
//
//	RecordBatch (magic 2), big endian:
//	 0 baseOffset int64        8 batchLength int32     12 partitionLeaderEpoch int32
//	16 magic int8             17 crc uint32 (CRC-32C of attributes..end)
//	21 attributes int16       23 lastOffsetDelta int32 27 baseTimestamp int64
//	35 maxTimestamp int64     43 producerId int64      51 producerEpoch int16
//	53 baseSequence int32     57 recordsCount int32    61 records
//
//	legacy message (magic 0/1), one per record or one compressed wrapper:
//	 0 offset int64            8 messageSize int32     12 crc uint32
//	16 magic int8             17 attributes int8      18 timestamp int64 (magic 1)
//	   key bytes (int32 length), value bytes (int32 length)
//
// Fingerprints (Batch.Hash) and CRCs. A RecordBatch's CRC-32C covers every
// byte from attributes to the end: the header fields after it and all
// records. decode checks it (crc32 with the Castagnoli table, which uses the
// CPU's CRC instruction) and fingerprints the same bytes with XXH3-64
// (batchSums). A batch whose CRC does not match its bytes is Corrupt:
// counted (Stats.CorruptBatches) and never matched by detect. Two batches
// have the same fingerprint only when all their bytes from attributes on are
// equal (but for a 64-bit hash collision): equal CRCs are not enough, since
// a CRC is linear and four appended bytes forge any CRC wanted.
//
// A legacy message set (magic 0/1) has one CRC-32 (IEEE) per message, over
// magic..end; each is checked, one wrong makes the set Corrupt, and the
// fingerprint hashes every message from its CRC on with xxhash64, message by
// message through the Decoder's digest (see legacySet). A legacy set and a
// RecordBatch never hold the same bytes, so the two hashes never need to
// compare.
//
// The hash is XXH3-64, not xxhash64, maphash or FNV-1a: with the vector
// units (AVX2, AVX-512) it runs at several times the speed of the CRC
// instruction, so fingerprinting every byte costs a fraction of checking
// it; and, unlike maphash with its random seed, it is the same in every
// Decoder and every run, so fingerprints compare across runs, tests and
// fuzz invariants. The CRC and the hash each take the bytes in one call
// (two passes): at these speeds a batch (at most a few MiB, in the L2
// cache after the first pass) is read faster twice whole than once in
// chunks handed to both in turn.

const (
	batchHeaderBytes  = 61 // RecordBatch header, through recordsCount
	batchCRCOffset    = 17
	batchAttrOffset   = 21 // the CRC covers attributes..end
	legacyLogOverhead = 12 // offset and messageSize
)

// castagnoli is the CRC-32C table of RecordBatch CRCs.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchSums returns the CRC-32C and the XXH3-64 of p. It allocates
// nothing.
func batchSums(p []byte) (crc uint32, hash uint64) {
	return crc32.Checksum(p, castagnoli), xxh3.Hash(p)
}

// appendBatches walks records, a partition's Records bytes, appending one
// Batch per RecordBatch and one per run of consecutive legacy messages. On
// bytes it cannot walk (a truncated trailing batch, a bad length, an unknown
// magic) it stops, keeps the batches before, and says why.
func (d *Decoder) appendBatches(dst []Batch, records []byte, topic string, id [16]byte, partition int32) ([]Batch, error) {
	off := 0
	for off < len(records) {
		b := records[off:]
		if len(b) < 17 {
			return dst, fmt.Errorf("partial record batch of %d bytes at records byte %d", len(b), off)
		}
		var (
			batch Batch
			n     int
			err   error
		)
		switch magic := int8(b[16]); magic {
		case 2:
			batch, n, err = d.recordBatch(b)
		case 0, 1:
			batch, n, err = d.legacySet(b)
		default:
			err = fmt.Errorf("record batch magic %d", magic)
		}
		if err != nil {
			return dst, fmt.Errorf("%w at records byte %d", err, off)
		}
		if d.opts.RecordPrints {
			d.keepRaw(&batch, b[:n])
		}
		if d.opts.Records > 0 {
			if batch.Magic == 2 {
				d.batchRecords(&batch, b)
			} else {
				d.legacyRecords(&batch, b)
			}
		}
		batch.Topic, batch.TopicID, batch.Partition = topic, id, partition
		dst = append(dst, batch)
		off += n
	}
	return dst, nil
}

// recordBatch reads the RecordBatch at the start of b and returns it with
// its length.
func (d *Decoder) recordBatch(b []byte) (Batch, int, error) {
	if n, ok := batchLen(b); ok {
		var sum *batchSum
		if d.scan != nil {
			if sum = d.scan.summed(d.scanBuf, b, n); sum != nil {
				d.scanHits++ // summed as the frame came (scan.go)
			}
		}
		return wholeBatch(b, n, sum), n, nil
	}
	if len(b) < batchHeaderBytes {
		return Batch{}, 0, fmt.Errorf("partial record batch header of %d bytes", len(b))
	}
	length := int32(binary.BigEndian.Uint32(b[8:]))
	if length < batchHeaderBytes-12 {
		return Batch{}, 0, fmt.Errorf("record batch length %d", length)
	}
	return Batch{}, 0, fmt.Errorf("partial record batch: %d of %d bytes", len(b), 12+int(length))
}

// recordBatchAt is recordBatch without an error to format (a fetch's last
// batch is cut short by its byte limit as a rule): false when b does not
// start with a whole RecordBatch.
func recordBatchAt(b []byte) (Batch, int, bool) {
	n, ok := batchLen(b)
	if !ok {
		return Batch{}, 0, false
	}
	return wholeBatch(b, n, nil), n, true
}

// batchLen returns the length of the RecordBatch at the start of b, false
// when b does not start with a whole one.
func batchLen(b []byte) (int, bool) {
	if len(b) < batchHeaderBytes {
		return 0, false
	}
	length := int32(binary.BigEndian.Uint32(b[8:]))
	n := 12 + int(length)
	if length < batchHeaderBytes-12 || n > len(b) {
		return 0, false
	}
	return n, true
}

// wholeBatch reads the RecordBatch of n bytes at the start of b, whose
// length batchLen has checked. Its CRC-32C is sum's when sum is not nil
// (summed as the frame came), else it is computed here with the hash.
func wholeBatch(b []byte, n int, sum *batchSum) Batch {
	bt := batchHeader(b, n)
	var crc uint32
	if sum != nil {
		crc, bt.Hash = sum.crc, xxh3.Hash(b[batchAttrOffset:n])
	} else {
		crc, bt.Hash = batchSums(b[batchAttrOffset:n])
	}
	bt.Corrupt = crc != bt.CRC
	return bt
}

// batchHeader reads the header fields of the RecordBatch of n bytes at the
// start of b, whose length has been checked.
func batchHeader(b []byte, n int) Batch {
	be := binary.BigEndian
	return Batch{
		Magic:           2,
		CRC:             be.Uint32(b[batchCRCOffset:]),
		Attributes:      int16(be.Uint16(b[21:])),
		LastOffsetDelta: int32(be.Uint32(b[23:])),
		FirstTimestamp:  int64(be.Uint64(b[27:])),
		MaxTimestamp:    int64(be.Uint64(b[35:])),
		ProducerID:      int64(be.Uint64(b[43:])),
		ProducerEpoch:   int16(be.Uint16(b[51:])),
		FirstSequence:   int32(be.Uint32(b[53:])),
		NumRecords:      int32(be.Uint32(b[57:])),
		Length:          n,
	}
}

// legacySet reads the run of legacy messages (magic 0 or 1) at the start of
// b, up to the end of b or the next RecordBatch, and returns it as one Batch
// with its length. The fingerprint covers each message from its CRC on,
// leaving out the offsets, which clients may set as they like; each
// message's CRC-32 is checked, and one that does not match makes the set
// Corrupt.
func (d *Decoder) legacySet(b []byte) (Batch, int, error) {
	batch := Batch{
		Magic:          int8(b[16]),
		FirstTimestamp: -1,
		MaxTimestamp:   -1,
		ProducerID:     -1,
		ProducerEpoch:  -1,
		FirstSequence:  -1,
	}
	h := &d.hash
	h.Reset()
	off := 0
	for off < len(b) {
		m := b[off:]
		if len(m) < 17 {
			return Batch{}, 0, fmt.Errorf("partial legacy message of %d bytes", len(m))
		}
		magic := int8(m[16])
		if magic == 2 {
			break // a RecordBatch follows
		}
		if magic > 1 || magic < 0 {
			return Batch{}, 0, fmt.Errorf("legacy message magic %d", magic)
		}
		size := int32(binary.BigEndian.Uint32(m[8:]))
		least := int32(4 + 1 + 1 + 4 + 4) // crc, magic, attributes, key and value lengths
		if magic == 1 {
			least += 8
		}
		if size < least {
			return Batch{}, 0, fmt.Errorf("legacy message size %d", size)
		}
		n := legacyLogOverhead + int(size)
		if n > len(m) {
			return Batch{}, 0, fmt.Errorf("partial legacy message: %d of %d bytes", len(m), n)
		}
		if batch.NumRecords == 0 {
			batch.CRC = binary.BigEndian.Uint32(m[12:])
			batch.Attributes = int16(int8(m[17]))
		}
		if magic == 1 {
			ts := int64(binary.BigEndian.Uint64(m[18:]))
			if batch.NumRecords == 0 {
				batch.FirstTimestamp = ts
			}
			batch.MaxTimestamp = max(batch.MaxTimestamp, ts)
		}
		if crc32.ChecksumIEEE(m[16:n]) != binary.BigEndian.Uint32(m[12:]) {
			batch.Corrupt = true
		}
		h.Write(m[legacyLogOverhead:n])
		batch.NumRecords++
		off += n
	}
	batch.LastOffsetDelta = batch.NumRecords - 1
	batch.Length = off
	batch.Hash = h.Sum64()
	return batch, off, nil
}
