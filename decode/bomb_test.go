package decode

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/klauspost/compress/snappy"
)

// snappyZeros returns a raw snappy block of n MiB of zeros, built from the
// encoding of one MiB repeated: its tags copy from the bytes before them,
// so the repeats are a valid block, and the test never holds the zeros.
func snappyZeros(n int) []byte {
	one := snappy.Encode(nil, make([]byte, 1<<20))
	_, k := binary.Uvarint(one)
	tags := one[k:]
	out := binary.AppendUvarint(make([]byte, 0, 8+n*len(tags)), uint64(n)<<20)
	for range n {
		out = append(out, tags...)
	}
	return out
}

// xerialZeros returns a xerial section of n MiB of zeros in blocks of 64
// KiB, as the Java client frames them (its blocks are 32 KiB), every block
// the same.
func xerialZeros(n int) []byte {
	block := snappy.Encode(nil, make([]byte, 64<<10))
	out := append([]byte(nil), xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for range n * 16 {
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
	}
	return out
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSnappyBomb: a snappy batch of 1 GiB of zeros, raw or xerial, costs at
// most the cap per batch (Options.MaxDecompressedBytes) in allocation, for
// records and for record prints alike: a raw block that decodes beyond the
// cap is refused from its length alone, a xerial section stops at the last
// block within the cap, its output grown geometrically.
func TestSnappyBomb(t *testing.T) {
	if n, _ := snappy.DecodedLen(snappyZeros(4)); n != 4<<20 {
		t.Fatalf("raw block of %d bytes, want 4 MiB", n)
	}
	if out, err := snappy.Decode(nil, snappyZeros(4)); err != nil || len(out) != 4<<20 || bytes.ContainsFunc(out, func(r rune) bool { return r != 0 }) {
		t.Fatalf("repeated tags do not decode to zeros: %d bytes, %v", len(out), err)
	}
	const limit = DefaultMaxDecompressedBytes
	for _, tt := range []struct {
		name    string
		section []byte
		most    uint64 // bytes the decode may allocate
		out     int    // bytes decompressed
	}{
		{"raw", snappyZeros(1 << 10), 64 << 10, 0},
		{"xerial", xerialZeros(1 << 10), 2*limit + 1<<20, limit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := compressedBatch(2, 1, tt.section)
			for _, opts := range []Options{{Records: 10}, {RecordPrints: true}} {
				d := New(nil, opts)
				var bs []Batch
				got := allocated(func() {
					var err error
					if bs, err = d.appendBatches(nil, raw, "t", [16]byte{}, 0); err != nil || len(bs) != 1 {
						t.Fatalf("%d batches, %v", len(bs), err)
					}
					bs[0].RecordPrints()
				})
				st := d.Stats()
				if got > tt.most {
					t.Errorf("%+v: allocated %d MiB for a batch of 1 GiB, want at most %d MiB", opts, got>>20, tt.most>>20)
				}
				if st.DecompressTruncated != 1 || st.RecordErrors != 0 || st.DecompressedBytes != int64(tt.out) {
					t.Errorf("%+v: truncated %d, errors %d, %d bytes decompressed; want 1, 0, %d", opts, st.DecompressTruncated, st.RecordErrors, st.DecompressedBytes, tt.out)
				}
			}
		})
	}
}

// TestDecompressBudget: a Decoder decompresses at most
// Options.MaxDecompressedTotal over its run; the batch that reaches it is
// cut there, and the batches after it are not decompressed at all: no
// records read, no prints made, each counted.
func TestDecompressBudget(t *testing.T) {
	const mib = 1 << 20
	plain := testRecords(7)
	small := compressedBatch(1, 7, compressed(t, 1, plain))
	zeros := compressedBatch(1, 1, compressed(t, 1, make([]byte, 4*mib)))
	records := bytes.Join([][]byte{small, zeros, zeros, zeros, zeros, zeros, small}, nil)
	for _, opts := range []Options{{Records: 3}, {RecordPrints: true}} {
		opts.MaxDecompressedTotal = 10*mib + int64(len(plain))
		d := New(nil, opts)
		bs, err := d.appendBatches(nil, records, "t", [16]byte{}, 0)
		if err != nil || len(bs) != 7 {
			t.Fatalf("%d batches, %v", len(bs), err)
		}
		var prints []int
		for i := range bs {
			prints = append(prints, len(bs[i].RecordPrints()))
		}
		st := d.Stats()
		if st.DecompressedBytes != opts.MaxDecompressedTotal || st.DecompressTruncated != 1 || st.DecompressSkipped != 3 {
			t.Errorf("%+v: %d bytes decompressed, %d truncated, %d skipped; want %d, 1, 3",
				opts, st.DecompressedBytes, st.DecompressTruncated, st.DecompressSkipped, opts.MaxDecompressedTotal)
		}
		if opts.Records > 0 && (len(bs[0].Records) != 3 || len(bs[6].Records) != 0) {
			t.Errorf("records of the first and last batch: %d and %d, want 3 and 0 (budget spent)", len(bs[0].Records), len(bs[6].Records))
		}
		if opts.RecordPrints && (prints[0] != 7 || prints[6] != 0) {
			t.Errorf("prints of the first and last batch: %v, want 7 and 0 (budget spent)", prints)
		}
	}
	// A Printer of its own has its own budget.
	p := NewPrinter(Options{MaxDecompressedTotal: mib})
	if _, cut, err := p.decompress(1, compressed(t, 1, make([]byte, 2*mib))); !cut || err != nil {
		t.Errorf("own Printer: cut %v, %v; want cut at its budget", cut, err)
	}
	if _, _, err := p.decompress(1, compressed(t, 1, plain)); err != errBudget {
		t.Errorf("own Printer once spent: %v, want errBudget", err)
	}
}

// TestCodecClaims: a section whose header claims more than its bytes hold
// (a gzip extra field of 65535 bytes, a raw snappy block declaring 16 MiB
// in 4 bytes) is refused before the claim is allocated, and a failure is
// charged to the budget for what it decompressed.
func TestCodecClaims(t *testing.T) {
	tests := []struct {
		name  string
		codec int16
		src   []byte
	}{
		{"gzip extra field", 1, []byte{0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff}},
		{"snappy declared length", 2, binary.AppendUvarint(nil, 16<<20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPrinter(Options{})
			var err error
			n := allocated(func() { _, _, err = p.decompress(tt.codec, tt.src) })
			if err == nil {
				t.Errorf("no error")
			}
			if n > 16<<10 {
				t.Errorf("allocated %d bytes for a %d-byte section", n, len(tt.src))
			}
		})
	}
}
