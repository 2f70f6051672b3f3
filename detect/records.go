package detect

import "github.com/kdupcap/kdupcap/decode"

// Record is one record of a finding's batch, as decode read it with
// decode.Options.Records: the first records of the batch as the detector
// first saw it (its first attempt). Key, Value and header values are cut to
// decode.MaxRecordBytes; the Len fields keep the full lengths (-1: null).
type Record struct {
	// Offset is the record's offset in the log: the finding's appended base
	// offset plus OffsetDelta when the finding has exactly one appended
	// offset, -1 otherwise (none known, or the log holds several copies:
	// each copy's offset is that base offset plus OffsetDelta).
	Offset          int64
	OffsetDelta     int32
	TimestampMillis int64 // milliseconds since the epoch; -1 unknown
	Key, Value      []byte
	KeyLen          int
	ValueLen        int
	Headers         []RecordHeader
	// Known says the content fields above were read (always in a batch
	// finding; in a record-level finding only when decode read the record).
	Known bool
	// Record-level findings only: Hash is the record's print
	// (decode.RecordPrint.Hash: xxhash64 of its key, value and headers as
	// on the wire, the same in every run), Copies every copy, in attempt
	// order.
	Hash   uint64
	Copies []RecordCopy
}

// RecordCopy is one copy of a record sent again: the attempt that carried
// it (an index into Finding.Attempts), its offset delta in that batch, and
// its offset in the log when that attempt's answer shows the append (base
// offset plus delta), else -1.
type RecordCopy struct {
	Attempt     int
	OffsetDelta int32
	Offset      int64
}

// setContent copies the content decode read of a record into r.
func setContent(r *Record, dr *decode.Record) {
	r.Known = true
	r.TimestampMillis = dr.TimestampMillis
	r.Key, r.Value = dr.Key, dr.Value
	r.KeyLen, r.ValueLen = dr.KeyLen, dr.ValueLen
	if len(dr.Headers) > 0 {
		r.Headers = make([]RecordHeader, len(dr.Headers))
		for j, h := range dr.Headers {
			r.Headers[j] = RecordHeader(h)
		}
	}
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key      string
	Value    []byte
	ValueLen int
}

// maxRecordsHeld bounds the bytes of the records kept for the batches
// remembered and for the attempts record-level matching remembers
// (recordsSize counts them): with --records 1000, a few KB per batch would
// add up to gigabytes over MaxBatches batches. Beyond it a batch's records
// are not kept (Stats.RecordsNotKept): a finding on it shows none.
const maxRecordsHeld = 32 << 20

// recordsSize is about the memory recs hold: the Record structs and the
// copies of their keys, values and headers.
func recordsSize(recs []decode.Record) int {
	n := 0
	for i := range recs {
		r := &recs[i]
		n += 128 + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += 64 + len(h.Key) + len(h.Value)
		}
	}
	return n
}

// recordBudget counts the bytes of records held, by the batches remembered
// and by the carriers of record-level matching, within maxRecordsHeld.
type recordBudget struct{ held int }

// take reports whether recs fit in the budget, counting them if so.
func (b *recordBudget) take(recs []decode.Record) bool {
	size := recordsSize(recs)
	if b.held+size > maxRecordsHeld {
		return false
	}
	b.held += size
	return true
}

// give gives back what take counted for recs.
func (b *recordBudget) give(recs []decode.Record) { b.held -= recordsSize(recs) }

// keepRecords remembers the records of the batch newly filed in slot, when
// decode read any, within maxRecordsHeld. The map is made on first use, so
// a run without records pays nothing for it.
func (d *Detector) keepRecords(slot int32, bt *decode.Batch) {
	if len(bt.Records) == 0 {
		return
	}
	if !d.recBudget.take(bt.Records) {
		d.stats.RecordsNotKept++
		return
	}
	if d.records == nil {
		d.records = make(map[int32][]decode.Record)
	}
	d.records[slot] = bt.Records
}

// forgetRecords drops the records of the batch in slot.
func (d *Detector) forgetRecords(slot int32) {
	if recs, ok := d.records[slot]; ok {
		d.recBudget.give(recs)
		delete(d.records, slot)
	}
}

// attachRecords sets f.Records from the records kept for slot.
func (d *Detector) attachRecords(f *Finding, slot int32) {
	recs := d.records[slot]
	if len(recs) == 0 {
		return
	}
	base := int64(-1)
	if len(f.AppendedOffsets) == 1 {
		base = f.AppendedOffsets[0]
	}
	f.Records = make([]Record, len(recs))
	for i, r := range recs {
		out := &f.Records[i]
		out.Offset, out.OffsetDelta = -1, r.OffsetDelta
		if base >= 0 {
			out.Offset = base + int64(r.OffsetDelta)
		}
		setContent(out, &recs[i])
	}
}
