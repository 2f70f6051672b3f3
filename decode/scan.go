package decode

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
)

// A produce request that spans segments is copied into its direction's
// buffer as its segments come (conn.go), and decoded once whole. Its
// record batches are most of its bytes, and checking their CRCs once the
// frame is whole means reading megabytes again from memory the copy left
// long ago (the CRC instruction waits on memory, where the XXH3
// fingerprint, in vector units, reads ahead: summing it as the bytes come
// measured no faster); so while the frame is buffered a scan follows its
// structure (header, topics, partitions, the batches in each partition's
// records) over the bytes just copied, still in the cache, and sums each
// RecordBatch's CRC-32C as its bytes arrive. When the frame is decoded,
// appendBatches takes the CRC of a batch from the scan when the scan summed
// exactly that batch: the same bytes of the same buffer (their first
// byte's address), the same length. The scan only ever saves work: where
// it cannot follow the frame (a version before 3, a legacy message set, a
// length that does not fit) it stops, and the batches it did not sum are
// checked as before, so what is decoded never depends on it.

// scanMinFrame is the smallest frame scanned: below it the frame is in the
// cache when decoded anyway.
const scanMinFrame = 64 << 10

// maxScanned bounds the batches summed per frame.
const maxScanned = 4096

// scanChunk is how many bytes a scan lets come before it reads them: large
// enough for the CRC instruction's fast path (three streams at once) and
// few calls, small enough that they are still in the cache.
const scanChunk = 64 << 10

// Steps of a scan: what the bytes at pos are.
const (
	scanOff        uint8 = iota // not scanning
	scanHeader                  // size, key, version, correlation ID, client_id length
	scanClientID                // client_id, then tagged fields when flexible
	scanHeaderTags              // request header tagged fields
	scanTxnID                   // transactional_id
	scanAcks                    // acks, timeout_ms, topics count
	scanTopic                   // a topic's name or ID, and its partitions count
	scanPartition               // partition, records length
	scanBatch                   // a record batch's header (or the end of the records)
	scanBody                    // a record batch's bytes, summed
	scanPartTags                // a partition's tagged fields
	scanTopicTags               // a topic's tagged fields
	scanDone                    // the body's tagged fields reached: nothing more to sum
)

// afterTags is the step after the tagged fields that step reads.
func afterTags(step uint8) uint8 {
	switch step {
	case scanHeaderTags:
		return scanTxnID
	case scanPartTags:
		return scanPartition
	}
	return scanTopic // scanTopicTags
}

// batchScan is the scan of the frame a direction buffers.
type batchScan struct {
	step     uint8
	flexible bool
	version  int16
	pos      int // buffer offset of the next byte to read
	// topics and parts are the topics and the current topic's partitions
	// still to come; end is where the current partition's records end.
	topics, parts int
	end           int
	// The batch being summed: its start, its end, its CRC so far.
	start, stop int
	crc         uint32
	// sums are the batches summed, in frame order; hit is the index after
	// the last one taken; seen is the buffer length last scanned.
	sums []batchSum
	hit  int
	seen int
}

// batchSum is the CRC-32C of the bytes covered by the CRC of the
// RecordBatch of n bytes at buffer offset start.
type batchSum struct {
	start, n int
	crc      uint32
}

// scans reports whether a request of size bytes (after its size field) is
// scanned as it comes (scanMinFrame); a direction that never sends one
// carries no batchScan.
func scans(size int) bool { return size >= scanMinFrame }

// reset starts the scan of a frame whose first bytes the buffer has just
// got: a request of size bytes (after its size field) that scans.
func (s *batchScan) reset() {
	s.quit()
	s.step = scanHeader
}

// quit stops the scan and forgets its sums; nil (no scan yet) is stopped.
func (s *batchScan) quit() {
	if s != nil {
		*s = batchScan{sums: s.sums[:0]} // pos too: a position of the last frame would stall the next
	}
}

// off stops the scan where it is: what it summed stays.
func (s *batchScan) off() { s.step = scanOff }

// more scans buf, the frame buffered so far, when enough bytes came since
// the last time, or when the frame is whole; nil scans nothing.
func (s *batchScan) more(buf []byte, whole bool) {
	if s != nil && s.step != scanOff && (whole || len(buf)-s.seen >= scanChunk) {
		s.seen = len(buf)
		s.advance(buf)
	}
}

// count reads an array count (compact when flexible) or a string or bytes
// length (int16 when short is set and not flexible, else int32) at pos:
// the value (-1 for null), its length in bytes, and whether the bytes
// were there; an overflowing varint stops the scan.
func (s *batchScan) count(buf []byte, short bool) (int, int, bool) {
	if s.flexible {
		v, n := kbin.Uvarint(buf[s.pos:]) // n: 0 wants more bytes, -1 overflows
		switch {
		case n == 0:
			return 0, 0, false
		case n < 0:
			s.off()
			return 0, 0, false
		}
		return int(int64(v) - 1), n, true
	}
	if short {
		if len(buf)-s.pos < 2 {
			return 0, 0, false
		}
		return int(int16(binary.BigEndian.Uint16(buf[s.pos:]))), 2, true
	}
	if len(buf)-s.pos < 4 {
		return 0, 0, false
	}
	return int(int32(binary.BigEndian.Uint32(buf[s.pos:]))), 4, true
}

// skipCount passes over skip bytes at pos, then reads the count (an
// array's, or bytes') after them, a negative one as 0; false, with pos
// where it was, until the bytes are all there.
func (s *batchScan) skipCount(buf []byte, skip int) (int, bool) {
	if len(buf) < s.pos+skip {
		return 0, false
	}
	s.pos += skip
	n, w, ok := s.count(buf, false)
	if !ok {
		s.pos -= skip
		return 0, false
	}
	s.pos += w
	return max(n, 0), true
}

// tags passes over tagged fields at pos, reporting whether they were
// whole.
func (s *batchScan) tags(buf []byte) bool {
	n, _, err := skipTags(buf[s.pos:])
	if err == errShort {
		return false
	}
	if err != nil {
		s.off()
		return false
	}
	s.pos += n
	return true
}

// advance scans what buf, the frame buffered so far (from its size
// field), holds past the last call.
func (s *batchScan) advance(buf []byte) {
	for {
		if s.pos > len(buf) {
			return // a length past the bytes come so far
		}
		switch s.step {
		case scanOff, scanDone:
			return
		case scanHeader:
			if len(buf) < 14 {
				return
			}
			key, v := int16(binary.BigEndian.Uint16(buf[4:])), int16(binary.BigEndian.Uint16(buf[6:]))
			if key != keyProduce || v < 3 || v > 13 {
				s.off()
				return
			}
			s.version, s.flexible = v, v >= 9
			n := int(int16(binary.BigEndian.Uint16(buf[12:])))
			if n < -1 {
				s.off()
				return
			}
			s.pos, s.end = 14, 14+max(n, 0)
			s.step = scanClientID
		case scanClientID:
			if len(buf) < s.end {
				return
			}
			s.pos = s.end
			s.step = scanTxnID
			if s.flexible {
				s.step = scanHeaderTags
			}
		case scanHeaderTags, scanPartTags, scanTopicTags:
			if !s.tags(buf) {
				return
			}
			s.step = afterTags(s.step)
		case scanTxnID:
			n, w, ok := s.count(buf, true)
			if !ok || len(buf) < s.pos+w+max(n, 0) {
				return
			}
			s.pos += w + max(n, 0)
			s.step = scanAcks
		case scanAcks:
			n, ok := s.skipCount(buf, 6)
			if !ok {
				return
			}
			s.topics = n
			s.step = scanTopic
		case scanTopic:
			if s.topics == 0 {
				s.step = scanDone
				return
			}
			var w int
			if s.version >= 13 {
				w = 16
			} else {
				n, nw, ok := s.count(buf, true)
				if !ok {
					return
				}
				w = nw + max(n, 0)
			}
			n, ok := s.skipCount(buf, w)
			if !ok {
				return
			}
			s.parts = n
			s.step = scanPartition
		case scanPartition:
			if s.parts == 0 {
				s.topics--
				s.step = scanTopicTags
				if !s.flexible {
					s.step = scanTopic
				}
				continue
			}
			n, ok := s.skipCount(buf, 4)
			if !ok {
				return
			}
			s.end = s.pos + n
			s.step = scanBatch
		case scanBatch:
			if s.pos >= s.end {
				s.pos = s.end
				s.parts--
				s.step = scanPartTags
				if !s.flexible {
					s.step = scanPartition
				}
				continue
			}
			if len(buf) < s.pos+17 {
				return
			}
			length := int(int32(binary.BigEndian.Uint32(buf[s.pos+8:])))
			n := 12 + length
			if buf[s.pos+16] != 2 || length < batchHeaderBytes-12 || n > s.end-s.pos || len(s.sums) >= maxScanned {
				// Not a batch the scan can sum: the rest of these records
				// are checked once the frame is whole.
				s.pos = s.end
				continue
			}
			s.start, s.stop, s.crc = s.pos, s.pos+n, 0
			s.pos += batchAttrOffset
			s.step = scanBody
		case scanBody:
			to := min(len(buf), s.stop)
			if to > s.pos {
				s.crc = crc32.Update(s.crc, castagnoli, buf[s.pos:to])
				s.pos = to
			}
			if s.pos < s.stop {
				return
			}
			s.sums = append(s.sums, batchSum{start: s.start, n: s.stop - s.start, crc: s.crc})
			s.step = scanBatch
		}
	}
}

// summed returns what the scan of buf summed for the RecordBatch of n
// bytes at the start of b, a part of buf, or nil if it did not: the scan's
// sums are in frame order and so are the batches asked for, so the search
// starts at the last one found.
func (s *batchScan) summed(buf, b []byte, n int) *batchSum {
	for i := s.hit; i < len(s.sums); i++ {
		e := &s.sums[i]
		if e.start < len(buf) && &buf[e.start] == &b[0] {
			if e.n != n {
				return nil
			}
			s.hit = i + 1
			return e
		}
	}
	return nil
}
