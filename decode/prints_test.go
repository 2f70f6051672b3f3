package decode

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stampedRecords is testRecords with timestamp deltas of step*i and the
// value of record odd (if >= 0) changed.
func stampedRecords(n int, step int64, odd int) []byte {
	var out []byte
	for i := range n {
		v := fmt.Appendf(nil, "value %d", i)
		if i == odd {
			v = append(v, '!')
		}
		r := kmsg.Record{TimestampDelta64: step * int64(i), OffsetDelta: int32(i),
			Key: fmt.Appendf(nil, "key-%d", i), Value: v, Headers: []kmsg.Header{{Key: "h", Value: []byte{0, 1, 2}}}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// wantPrints are the prints of stampedRecords(n, _, odd) as prints.go
// defines them, computed from the records' fields: xxhash64 of the key, the
// value and the headers as the wire holds them (varint lengths), in order.
func wantPrints(n, odd int) []RecordPrint {
	var out []RecordPrint
	for i := range n {
		v := fmt.Appendf(nil, "value %d", i)
		if i == odd {
			v = append(v, '!')
		}
		b := kbin.AppendVarintBytes(nil, fmt.Appendf(nil, "key-%d", i))
		b = kbin.AppendVarintBytes(b, v)
		b = kbin.AppendVarint(b, 1)
		b = kbin.AppendVarintString(b, "h")
		b = kbin.AppendVarintBytes(b, []byte{0, 1, 2})
		out = append(out, RecordPrint{Hash: xxhash.Sum64(b), OffsetDelta: int32(i), Index: int32(i)})
	}
	return out
}

// printsOfBatch decodes one batch with Options.RecordPrints and returns a
// copy of its prints, giving the kept bytes back as emit does.
func printsOfBatch(t *testing.T, d *Decoder, raw []byte) []RecordPrint {
	t.Helper()
	bs, err := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
	if err != nil || len(bs) != 1 {
		t.Fatalf("%d batches, %v", len(bs), err)
	}
	p := slices.Clone(bs[0].RecordPrints())
	d.releaseRaw(&Exchange{Batches: bs})
	return p
}

func TestRecordPrints(t *testing.T) {
	for codec := int16(0); codec <= 4; codec++ {
		t.Run(fmt.Sprint("codec ", codec), func(t *testing.T) {
			d := New(nil, Options{RecordPrints: true})
			first := printsOfBatch(t, d, compressedBatch(codec, 5, compressed(t, codec, stampedRecords(5, 10, -1))))
			// A retry re-encoded with new timestamps: the same prints.
			again := printsOfBatch(t, d, compressedBatch(codec, 5, compressed(t, codec, stampedRecords(5, 7, -1))))
			other := printsOfBatch(t, d, compressedBatch(codec, 5, compressed(t, codec, stampedRecords(5, 10, 3))))
			if want := wantPrints(5, -1); !slices.Equal(first, want) || !slices.Equal(again, want) {
				t.Fatalf("prints %v, re-encoded %v, want %v", first, again, want)
			}
			if want := wantPrints(5, 3); !slices.Equal(other, want) {
				t.Fatalf("record 3 changed: prints %v, want %v", other, want)
			}
			for i, p := range other {
				if (p.Hash == first[i].Hash) != (i != 3) {
					t.Errorf("record %d: %+v vs %+v", i, p, first[i])
				}
			}
			if d.raw.held != 0 {
				t.Errorf("%d bytes still held", d.raw.held)
			}
			if s := d.Stats(); s.RecordPrints != 15 || s.PrintedEager != 0 {
				t.Errorf("stats: %d prints, %d eager", s.RecordPrints, s.PrintedEager)
			}
		})
	}
}

func TestRecordPrintsKeptOnlyWhenAsked(t *testing.T) {
	raw := compressedBatch(1, 3, compressed(t, 1, testRecords(3)))
	// Not asked: nothing decompressed, the bytes given back.
	d := New(nil, Options{RecordPrints: true})
	batches := func(raw []byte) []Batch {
		t.Helper()
		bs, err := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
		if err != nil || len(bs) != 1 {
			t.Fatalf("%d batches, %v", len(bs), err)
		}
		return bs
	}
	bs := batches(raw)
	d.releaseRaw(&Exchange{Batches: bs})
	if s := d.Stats(); s.RecordPrints != 0 || d.raw.held != 0 {
		t.Errorf("not asked: %d prints, %d bytes held", s.RecordPrints, d.raw.held)
	}
	// Idempotent batches are kept too (an epoch bump re-sends records
	// under another sequence) and give their bytes back the same way.
	bs = batches(recordBatch(7, 0, 0, 3, string(testRecords(3))))
	if p := bs[0].RecordPrints(); !slices.Equal(p, wantPrints(3, -1)) {
		t.Errorf("idempotent: prints %v, want %v", p, wantPrints(3, -1))
	}
	d.releaseRaw(&Exchange{Batches: bs})
	if d.raw.held != 0 {
		t.Errorf("idempotent: %d bytes held after release", d.raw.held)
	}
	// Off: nothing kept.
	d = New(nil, Options{})
	bs = batches(raw)
	if p := bs[0].RecordPrints(); p != nil {
		t.Errorf("off: prints %v", p)
	}
	// Beyond the bound on bytes held: fingerprinted at once.
	d = New(nil, Options{RecordPrints: true})
	d.raw.held = DefaultMaxPrintBytes - 10
	if p := printsOfBatch(t, d, raw); !slices.Equal(p, wantPrints(3, -1)) || d.Stats().PrintedEager != 1 {
		t.Errorf("eager: %v, %d eager; want %v", p, d.Stats().PrintedEager, wantPrints(3, -1))
	}
}

// TestEagerPrintsBound: prints made at once, held by exchanges still
// pending, stay within Options.MaxPrintBytes; the batches beyond get none,
// counted, and the room comes back as the exchanges complete.
func TestEagerPrintsBound(t *testing.T) {
	raw := compressedBatch(0, 100, stampedRecords(100, 1, -1))
	d := New(nil, Options{RecordPrints: true, MaxPrintBytes: len(raw) + 100*printBytes*3})
	var pending []*Exchange
	for range 10 {
		// The bytes of the first are kept, then prints made at once
		// until those are at the bound.
		bs, err := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
		if err != nil || len(bs) != 1 {
			t.Fatalf("%d batches, %v", len(bs), err)
		}
		pending = append(pending, &Exchange{Batches: bs})
		if got := d.raw.eager * printBytes; got > d.opts.MaxPrintBytes {
			t.Fatalf("%d bytes of prints made at once held, bound %d", got, d.opts.MaxPrintBytes)
		}
	}
	st := d.Stats()
	if st.PrintedEager == 0 || st.PrintsSkipped == 0 || st.PrintedEager*100 > int64(d.opts.MaxPrintBytes/printBytes) {
		t.Errorf("printed at once %d, skipped %d; want some of each, within the bound", st.PrintedEager, st.PrintsSkipped)
	}
	if p := pending[9].Batches[0].RecordPrints(); p != nil {
		t.Errorf("a skipped batch has %d prints", len(p))
	}
	for _, x := range pending {
		d.releaseRaw(x)
	}
	if d.raw.eager != 0 || d.raw.held != 0 {
		t.Errorf("after release: %d prints, %d bytes held", d.raw.eager, d.raw.held)
	}
}

// TestLegacyRecordPrints: a legacy message's print is its key and value,
// not its offset or timestamp (a rebuilt retry changes both), and another
// value is another print.
func TestLegacyRecordPrints(t *testing.T) {
	d := New(nil, Options{RecordPrints: true})
	a := printsOfBatch(t, d, legacySetAt(1, 0, 3, "same", 1700000000000))
	b := printsOfBatch(t, d, legacySetAt(1, 40, 3, "same", 1700000005000))
	c := printsOfBatch(t, d, legacySetAt(1, 0, 3, "other", 1700000000000))
	// A message's print is xxhash64 of its key and value as on the wire:
	// a null key (length -1), then the value with its int32 length.
	legacyPrints := func(value string) []RecordPrint {
		content := kbin.AppendNullableBytes(kbin.AppendNullableBytes(nil, nil), []byte(value))
		var out []RecordPrint
		for i := range int32(3) {
			out = append(out, RecordPrint{Hash: xxhash.Sum64(content), OffsetDelta: i, Index: i})
		}
		return out
	}
	if want := legacyPrints("same"); !slices.Equal(a, want) || !slices.Equal(b, want) {
		t.Errorf("the same messages at other offsets and times: prints %v and %v, want %v", a, b, want)
	}
	if want := legacyPrints("other"); !slices.Equal(c, want) {
		t.Errorf("another value: prints %v, want %v", c, want)
	}
	if legacyPrints("same")[0].Hash == legacyPrints("other")[0].Hash {
		t.Error("two values, one print")
	}
}

// TestKeepPrints: prints kept for after the Sink's call survive the bytes
// going back to the Decoder's pool, and the Decoder's own prints buffer
// reused by the next batch does not change them.
func TestKeepPrints(t *testing.T) {
	d := New(nil, Options{RecordPrints: true})
	raw := compressedBatch(1, 5, compressed(t, 1, stampedRecords(5, 10, -1)))
	want := wantPrints(5, -1)
	bs, err := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
	if err != nil || len(bs) != 1 {
		t.Fatalf("%d batches, %v", len(bs), err)
	}
	bs[0].KeepPrints()
	d.releaseRaw(&Exchange{Batches: bs})
	if d.raw.held != 0 || bs[0].raw != nil {
		t.Errorf("%d bytes still held after the call", d.raw.held)
	}
	printsOfBatch(t, d, compressedBatch(1, 5, compressed(t, 1, stampedRecords(5, 10, 2)))) // reuses the Decoder's prints
	if got := bs[0].RecordPrints(); !slices.Equal(got, want) {
		t.Errorf("kept prints %v, want %v", got, want)
	}
}

// TestRecordPrintsBound: a batch of more than MaxBatchPrints records is
// fingerprinted up to the bound, in order, and counted as cut, for every
// codec; one at the bound is not cut.
func TestRecordPrintsBound(t *testing.T) {
	for codec := int16(0); codec <= 4; codec++ {
		for _, n := range []int{MaxBatchPrints, MaxBatchPrints + 100} {
			t.Run(fmt.Sprint("codec ", codec, " records ", n), func(t *testing.T) {
				d := New(nil, Options{RecordPrints: true})
				p := printsOfBatch(t, d, compressedBatch(codec, int32(n), compressed(t, codec, stampedRecords(n, 1, -1))))
				want := wantPrints(min(n, MaxBatchPrints), -1)
				if !slices.Equal(p, want) {
					t.Fatalf("%d prints, want the first %d", len(p), len(want))
				}
				wantCut := int64(0)
				if n > MaxBatchPrints {
					wantCut = 1
				}
				if st := d.Stats(); st.PrintsCut != wantCut || st.RecordErrors != 0 {
					t.Errorf("prints cut %d, record errors %d; want %d, 0", st.PrintsCut, st.RecordErrors, wantCut)
				}
			})
		}
	}
}

// TestRecordPrintsMalformed: bytes that are not a record as the broker
// reads one (trailing bytes, a null header key, headers missing; a negative
// key or value length is null to it) get no print, so that the
// same junk in two batches never matches, and no record is read from them
// either; the records before stay.
func TestRecordPrintsMalformed(t *testing.T) {
	good := stampedRecords(1, 1, -1)
	rec := func(body []byte) []byte {
		b := []byte{0}               // attributes
		b = kbin.AppendVarlong(b, 0) // timestamp delta
		b = kbin.AppendVarint(b, 1)  // offset delta
		b = append(b, body...)
		return append(kbin.AppendVarint(nil, int32(len(b))), b...)
	}
	tests := []struct {
		name string
		body []byte
	}{
		{"trailing bytes", []byte{0x01, 0x01, 0x00, 'x', 'y'}},    // null key and value, no headers, then junk
		{"null header key", []byte{0x01, 0x01, 0x02, 0x01, 0x00}}, // one header, key -1
		{"header count past the bytes", []byte{0x01, 0x01, 0x7e}}, // 63 headers, none there
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			section := append(append([]byte(nil), good...), rec(tt.body)...)
			d := New(nil, Options{RecordPrints: true, Records: 5})
			raw := compressedBatch(0, 2, section)
			bs, err := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
			if err != nil || len(bs) != 1 {
				t.Fatalf("%d batches, %v", len(bs), err)
			}
			if p := bs[0].RecordPrints(); !slices.Equal(p, wantPrints(1, -1)) {
				t.Errorf("prints %v, want only the good record's", p)
			}
			if n := len(bs[0].Records); n != 1 {
				t.Errorf("%d records read, want the good one", n)
			}
			if st := d.Stats(); st.RecordErrors == 0 {
				t.Errorf("no record error counted")
			}
		})
	}
}
