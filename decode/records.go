package decode

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kbin"
)

// Records of a batch are decoded only when Options.Records asks for them
// (the first N of each batch), so that the user recognises the messages of
// a finding. The records section of a RecordBatch (after recordsCount, byte
// 61) is decompressed first when attributes bits 0-2 name a codec; each
// record is then, in varints:
//
//	length varint, attributes int8, timestampDelta varlong,
//	offsetDelta varint, key varint bytes, value varint bytes,
//	headers count varint, each header key varint string, value varint bytes
//
// A legacy set (magic 0/1) holds one record per message, or one wrapper
// message whose value is a compressed inner set (decompressed once, never
// recursively).

// Defaults and bounds of record decoding.
const (
	// DefaultMaxDecompressedBytes caps what one batch decompresses to when
	// Options.MaxDecompressedBytes is zero.
	DefaultMaxDecompressedBytes = 16 << 20
	// DefaultMaxDecompressedTotal bounds what one Decoder (or Printer)
	// decompresses over a run when Options.MaxDecompressedTotal is zero.
	DefaultMaxDecompressedTotal = 4 << 30
	// MaxRecordBytes is the most bytes of a key, value or header value a
	// Record keeps; the full length is kept beside it.
	MaxRecordBytes = 256
	// MaxRecordHeaders is the most headers a Record keeps.
	MaxRecordHeaders = 16
)

// Record is one record of a batch, its key, value and header values cut to
// MaxRecordBytes. The byte slices are the Record's own.
type Record struct {
	// OffsetDelta is the record's offset relative to the batch's base
	// offset (for a legacy set, its index in the set).
	OffsetDelta int32
	// TimestampMillis is in milliseconds since the epoch: the batch's
	// FirstTimestamp plus the record's delta (magic 2), the message's
	// timestamp (magic 1), or -1 (magic 0).
	TimestampMillis int64
	// Key and Value are nil when null, and then KeyLen or ValueLen is -1;
	// otherwise KeyLen and ValueLen are their full lengths on the wire.
	Key, Value       []byte
	KeyLen, ValueLen int
	Headers          []RecordHeader
}

// RecordHeader is one record header; Value is cut to MaxRecordBytes and
// ValueLen is its full length (-1: null).
type RecordHeader struct {
	Key      string
	Value    []byte
	ValueLen int
}

// clip returns a copy of at most MaxRecordBytes of b (nil for nil) and b's
// length (-1 for nil).
func clip(b []byte) ([]byte, int) {
	if b == nil {
		return nil, -1
	}
	n := min(len(b), MaxRecordBytes)
	return append(make([]byte, 0, n), b[:n]...), len(b)
}

// batchRecords decodes the first Options.Records records of the
// RecordBatch at the start of b (n bytes long, header already checked)
// into batch.Records, decompressing the section if need be. Errors and
// truncations are counted, never fatal.
func (d *Decoder) batchRecords(batch *Batch, b []byte) {
	section, truncated, ok := d.pr.recordsSection(batch, b)
	if !ok {
		return
	}
	want := d.opts.Records
	if batch.NumRecords >= 0 && int(batch.NumRecords) < want {
		want = int(batch.NumRecords)
	}
	var err error
	batch.Records, err = readRecords(section, want, batch.FirstTimestamp)
	if err != nil && !truncated {
		// A record cut by the cap is not malformed.
		d.stats.RecordErrors++
	}
}

// recordsSection returns the records section of the RecordBatch b (header
// already checked), decompressed if its attributes name a codec (valid
// until the next decompression), and whether the cap cut it; ok is false,
// counted, when it does not decompress.
func (p *Printer) recordsSection(batch *Batch, b []byte) (section []byte, truncated, ok bool) {
	section = b[batchHeaderBytes:batch.Length]
	codec := batch.Attributes & 0x07
	if codec == 0 {
		return section, false, true
	}
	out, cut, err := p.decompress(codec, section)
	if cut {
		p.stats.DecompressTruncated++
	}
	if err != nil {
		if err != errBudget {
			p.stats.RecordErrors++
		}
		return nil, false, false
	}
	return out, cut, true
}

// appendPrints fingerprints every record of a decompressed records section
// (magic 2), stopping at the first malformed one. A record is hashed from
// its key on (key, value and headers, as on the wire), so that neither its
// timestamp nor its offset delta takes part.
func appendPrints(dst []RecordPrint, section []byte) ([]RecordPrint, error) {
	r := kbin.Reader{Src: section}
	for idx := int32(0); len(r.Src) > 0; idx++ {
		if idx >= MaxBatchPrints {
			return dst, errPrintsCut
		}
		length := r.Varint()
		if !r.Ok() || length < 0 || int(length) > len(r.Src) {
			return dst, fmt.Errorf("record %d length %d of %d bytes left", idx, length, len(r.Src))
		}
		rr := kbin.Reader{Src: r.Span(int(length))}
		rr.Int8()    // attributes
		rr.Varlong() // timestampDelta
		offDelta := rr.Varint()
		if !rr.Ok() || !wellFormed(rr.Src) {
			// A print of bytes that are not a record would match the same
			// junk elsewhere: none is made.
			return dst, fmt.Errorf("record %d malformed", idx)
		}
		dst = append(dst, RecordPrint{Hash: xxhash.Sum64(rr.Src), OffsetDelta: offDelta, Index: idx})
	}
	return dst, nil
}

// wellFormed reports whether b is exactly a record's key, value and
// headers: varint-length bytes (-1: null), and a header count (not
// negative) of varint-length keys (never null) and values, with nothing
// after, as the broker checks a record.
func wellFormed(b []byte) bool {
	r := kbin.Reader{Src: b}
	r.VarintBytes() // key
	r.VarintBytes() // value
	n := r.VarintArrayLen()
	if !r.Ok() || n < 0 || int(n) > len(r.Src) {
		return false
	}
	for range n {
		if k := r.Varint(); k < 0 || !r.Ok() {
			return false // a header key is never null
		} else {
			r.Span(int(k))
		}
		r.VarintBytes()
	}
	return r.Ok() && len(r.Src) == 0
}

// readRecords parses up to want records from a decompressed records
// section, stopping at the first malformed one.
func readRecords(section []byte, want int, firstTimestamp int64) ([]Record, error) {
	var out []Record
	r := kbin.Reader{Src: section}
	for len(out) < want && len(r.Src) > 0 {
		length := r.Varint()
		if !r.Ok() || length < 0 || int(length) > len(r.Src) {
			return out, fmt.Errorf("record %d length %d of %d bytes left", len(out), length, len(r.Src))
		}
		rr := kbin.Reader{Src: r.Span(int(length))}
		rr.Int8() // attributes
		tsDelta := rr.Varlong()
		offDelta := rr.Varint()
		if !rr.Ok() || !wellFormed(rr.Src) {
			// As the broker refuses it (Java's DefaultRecord: the size
			// must match, a header key must not be null).
			return out, fmt.Errorf("record %d malformed", len(out))
		}
		key := rr.VarintBytes()
		value := rr.VarintBytes()
		nh := rr.VarintArrayLen()
		if !rr.Ok() || nh < 0 {
			return out, fmt.Errorf("record %d malformed", len(out))
		}
		rec := Record{OffsetDelta: offDelta, TimestampMillis: addTimestamp(firstTimestamp, tsDelta)}
		rec.Key, rec.KeyLen = clip(key)
		rec.Value, rec.ValueLen = clip(value)
		for i := int32(0); i < nh; i++ {
			hk := rr.VarintBytes()
			hv := rr.VarintBytes()
			if !rr.Ok() {
				return out, fmt.Errorf("record %d header %d malformed", len(out), i)
			}
			if len(rec.Headers) < MaxRecordHeaders {
				k, _ := clip(hk)
				h := RecordHeader{Key: string(k)}
				h.Value, h.ValueLen = clip(hv)
				rec.Headers = append(rec.Headers, h)
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// addTimestamp adds delta to first without overflowing.
func addTimestamp(first, delta int64) int64 {
	if (delta > 0 && first > math.MaxInt64-delta) || (delta < 0 && first < math.MinInt64-delta) {
		return -1
	}
	return first + delta
}

// legacyRecords decodes the first Options.Records records of the legacy
// message set b (batch.Length bytes, already walked by legacySet).
func (d *Decoder) legacyRecords(batch *Batch, b []byte) {
	w := legacyWalk{want: d.opts.Records}
	if err := d.pr.walkLegacy(&w, b[:batch.Length], true); err != nil && err != errBudget {
		d.stats.RecordErrors++
	}
	batch.Records = w.recs
}

// legacyWalk is what walkLegacy collects: the first want records, and
// every record's print when prints is set; n counts the records walked.
type legacyWalk struct {
	want   int
	prints bool
	n      int32
	recs   []Record
	pr     []RecordPrint
}

func (w *legacyWalk) more() bool {
	return len(w.recs) < w.want || w.prints && len(w.pr) < MaxBatchPrints
}

// walkLegacy walks the legacy messages in b into w; outer allows one level
// of compressed wrapper.
func (p *Printer) walkLegacy(w *legacyWalk, b []byte, outer bool) error {
	off := 0
	for w.more() && off < len(b) {
		m := b[off:]
		if len(m) < legacyLogOverhead+14 {
			return fmt.Errorf("partial legacy message at byte %d", off)
		}
		size := int(int32(binary.BigEndian.Uint32(m[8:])))
		n := legacyLogOverhead + size
		if size < 14 || n > len(m) {
			return fmt.Errorf("legacy message size %d at byte %d", size, off)
		}
		msg := kbin.Reader{Src: m[16:n]}
		magic := msg.Int8()
		attrs := msg.Int8()
		ts := int64(-1)
		if magic == 1 {
			ts = msg.Int64()
		}
		content := msg.Src // key and value, as on the wire
		key := msg.NullableBytes()
		value := msg.NullableBytes()
		if !msg.Ok() {
			return fmt.Errorf("legacy message malformed at byte %d", off)
		}
		off += n
		if codec := int16(attrs & 0x07); codec != 0 {
			if !outer {
				return fmt.Errorf("nested compressed legacy message at byte %d", off-n)
			}
			inner, truncated, err := p.decompress(codec, value)
			if truncated {
				p.stats.DecompressTruncated++
			}
			if err != nil {
				return err
			}
			// Inner messages are copied out before the buffer is reused.
			if ierr := p.walkLegacy(w, inner, false); ierr != nil && !truncated {
				return ierr
			}
			continue
		}
		if w.prints {
			w.pr = append(w.pr, RecordPrint{Hash: xxhash.Sum64(content), OffsetDelta: w.n, Index: w.n})
		}
		if len(w.recs) < w.want {
			rec := Record{OffsetDelta: w.n, TimestampMillis: ts}
			rec.Key, rec.KeyLen = clip(key)
			rec.Value, rec.ValueLen = clip(value)
			w.recs = append(w.recs, rec)
		}
		w.n++
	}
	return nil
}
