package decode

import "testing"

// FuzzRecords decodes an arbitrary records section under an arbitrary codec:
// the batch itself is always kept, at most Options.Records records come
// back, each cut to MaxRecordBytes with its full length beside it, and the
// decompression buffer never grows beyond the cap; every record read has
// its print, and the bytes kept for prints are given back.
func FuzzRecords(f *testing.F) {
	plain := testRecords(4)
	for codec := int16(0); codec <= 4; codec++ {
		f.Add(uint8(codec), compressed(f, codec, plain))
	}
	f.Add(uint8(2), xerialFrame(plain, 16))
	f.Add(uint8(2), xerialFrame(make([]byte, 1<<20), 1<<16))
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, codec uint8, section []byte) {
		d := New(nil, Options{Records: 3, MaxDecompressedBytes: limit, RecordPrints: true})
		raw := compressedBatch(int16(codec%8), 1000, section)
		bs, err := d.appendBatches(nil, raw, "t", [16]byte{}, 0)
		if err != nil || len(bs) != 1 {
			t.Fatalf("batch lost: %d, %v", len(bs), err)
		}
		if n := len(bs[0].Records); n > 3 {
			t.Fatalf("%d records, want at most 3", n)
		}
		if c := cap(d.pr.codecs.buf); c > limit {
			t.Fatalf("decompression buffer of %d bytes, cap %d", c, limit)
		}
		prints := bs[0].RecordPrints()
		for i, p := range prints {
			if int(p.Index) != i {
				t.Fatalf("print %d has index %d", i, p.Index)
			}
		}
		if len(prints) < len(bs[0].Records) {
			t.Fatalf("%d prints for %d records read", len(prints), len(bs[0].Records))
		}
		d.releaseRaw(&Exchange{Batches: bs})
		if d.raw.held != 0 {
			t.Fatalf("%d bytes held after release", d.raw.held)
		}
		for _, r := range bs[0].Records {
			if len(r.Key) > MaxRecordBytes || len(r.Value) > MaxRecordBytes || max(r.KeyLen, 0) < len(r.Key) || max(r.ValueLen, 0) < len(r.Value) ||
				(r.Key == nil) != (r.KeyLen == -1) || (r.Value == nil) != (r.ValueLen == -1) || len(r.Headers) > MaxRecordHeaders {
				t.Fatalf("record %+v", r)
			}
		}
	})
}
