package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testRecords returns n records as kmsg encodes them: key "key-i", value
// "value i", one header, offset delta i, timestamp delta 10*i.
func testRecords(n int) []byte {
	var out []byte
	for i := range n {
		r := kmsg.Record{
			TimestampDelta64: int64(10 * i),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "key-%d", i),
			Value:            fmt.Appendf(nil, "value %d", i),
			Headers:          []kmsg.Header{{Key: "h", Value: []byte{0, 1, 2}}},
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// compressed compresses src with codec as clients do.
func compressed(t testing.TB, codec int16, src []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case 0:
		return src
	case 1:
		w := gzip.NewWriter(&buf)
		w.Write(src)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case 2:
		return snappy.Encode(nil, src)
	case 3:
		w := lz4.NewWriter(&buf)
		w.Write(src)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case 4:
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		return e.EncodeAll(src, nil)
	}
	return buf.Bytes()
}

// xerialFrame frames src as the Java client does, in blocks of block bytes.
func xerialFrame(src []byte, block int) []byte {
	out := append([]byte(nil), xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(src) > 0 {
		n := min(block, len(src))
		b := snappy.Encode(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
		src = src[n:]
	}
	return out
}

// compressedBatch builds a RecordBatch of n records whose records section
// is section, with codec in its attributes.
func compressedBatch(codec int16, n int32, section []byte) []byte {
	b := kmsg.RecordBatch{
		Magic:           2,
		Attributes:      codec,
		LastOffsetDelta: n - 1,
		FirstTimestamp:  1700000000000,
		MaxTimestamp:    1700000000000 + int64(n),
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      n,
		Records:         section,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func TestBatchRecords(t *testing.T) {
	plain := testRecords(7)
	tests := []struct {
		name    string
		codec   int16
		section []byte
	}{
		{"none", 0, plain},
		{"gzip", 1, compressed(t, 1, plain)},
		{"snappy raw", 2, compressed(t, 2, plain)},
		{"snappy xerial", 2, xerialFrame(plain, 40)},
		{"lz4", 3, compressed(t, 3, plain)},
		{"zstd", 4, compressed(t, 4, plain)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(nil, Options{Records: 5})
			bs, err := d.appendBatches(nil, compressedBatch(tt.codec, 7, tt.section), "t", [16]byte{}, 0)
			if err != nil || len(bs) != 1 {
				t.Fatalf("batches %d, err %v", len(bs), err)
			}
			recs := bs[0].Records
			if len(recs) != 5 {
				t.Fatalf("got %d records, want 5 (stats %+v)", len(recs), d.Stats())
			}
			for i, r := range recs {
				if r.OffsetDelta != int32(i) || r.TimestampMillis != 1700000000000+int64(10*i) ||
					string(r.Key) != fmt.Sprintf("key-%d", i) || string(r.Value) != fmt.Sprintf("value %d", i) ||
					r.KeyLen != len(r.Key) || r.ValueLen != len(r.Value) ||
					len(r.Headers) != 1 || r.Headers[0].Key != "h" || !bytes.Equal(r.Headers[0].Value, []byte{0, 1, 2}) {
					t.Errorf("record %d: %+v", i, r)
				}
			}
			if s := d.Stats(); s.RecordErrors != 0 || s.DecompressTruncated != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestRecordsOff(t *testing.T) {
	d := New(nil, Options{})
	bs, err := d.appendBatches(nil, compressedBatch(1, 7, compressed(t, 1, testRecords(7))), "t", [16]byte{}, 0)
	if err != nil || len(bs) != 1 || bs[0].Records != nil {
		t.Fatalf("records decoded with Records 0: %+v, %v", bs, err)
	}
}

func TestRecordTruncation(t *testing.T) {
	long := strings.Repeat("v", 1000)
	r := kmsg.Record{Key: nil, Value: []byte(long)}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	d := New(nil, Options{Records: 1})
	bs, err := d.appendBatches(nil, compressedBatch(0, 1, r.AppendTo(nil)), "t", [16]byte{}, 0)
	if err != nil || len(bs) != 1 {
		t.Fatalf("%d batches, %v", len(bs), err)
	}
	got := bs[0].Records
	if len(got) != 1 || got[0].Key != nil || got[0].KeyLen != -1 || len(got[0].Value) != MaxRecordBytes || got[0].ValueLen != 1000 {
		t.Fatalf("got %+v", got)
	}
}

func TestLegacyRecords(t *testing.T) {
	inner := legacySet(1, 0, 3, "legacy")
	wrapper := func(codec int16) []byte {
		value := compressed(t, codec, inner)
		body := []byte{0, 0, 0, 0, 1, byte(codec)}
		body = binary.BigEndian.AppendUint64(body, 1700000000000)
		body = binary.BigEndian.AppendUint32(body, 0xffffffff) // null key
		body = binary.BigEndian.AppendUint32(body, uint32(len(value)))
		body = append(body, value...)
		binary.BigEndian.PutUint32(body, crc32.ChecksumIEEE(body[4:]))
		out := binary.BigEndian.AppendUint64(nil, 2)
		out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
		return append(out, body...)
	}
	tests := []struct {
		name string
		set  []byte
	}{
		{"plain", inner},
		{"gzip wrapper", wrapper(1)},
		{"snappy wrapper", wrapper(2)},
		{"lz4 wrapper", wrapper(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(nil, Options{Records: 2})
			bs, err := d.appendBatches(nil, tt.set, "t", [16]byte{}, 0)
			if err != nil || len(bs) != 1 {
				t.Fatalf("batches %d, err %v", len(bs), err)
			}
			recs := bs[0].Records
			if len(recs) != 2 || string(recs[1].Value) != "legacy" || recs[1].OffsetDelta != 1 || recs[1].TimestampMillis != 1700000000001 {
				t.Fatalf("records %+v, stats %+v", recs, d.Stats())
			}
		})
	}
}

func TestCorruptCompressed(t *testing.T) {
	plain := testRecords(3)
	for codec := int16(1); codec <= 5; codec++ {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			section := compressed(t, min(codec, 4), plain)
			junk := append([]byte(nil), section...)
			for i := len(junk) / 3; i < len(junk); i++ {
				junk[i] ^= 0x5a
			}
			d := New(nil, Options{Records: 3})
			bs, err := d.appendBatches(nil, compressedBatch(codec, 3, junk), "t", [16]byte{}, 0)
			if err != nil || len(bs) != 1 {
				t.Fatalf("batch lost: %d, %v", len(bs), err)
			}
			if s := d.Stats(); s.RecordErrors != 1 {
				t.Errorf("record errors %d, want 1", s.RecordErrors)
			}
		})
	}
}

// TestDecompressionBomb: 1 GiB of zeros compressed stops at the cap, and
// decoding allocates about the cap, not the gigabyte.
func TestDecompressionBomb(t *testing.T) {
	const limit = 1 << 20
	// 1 GiB of zeros each, built cheaply: gzip members and zstd frames of
	// 1 MiB concatenated (one stream to the readers), an lz4 frame of
	// 1024 blocks.
	zeros := make([]byte, 1<<20)
	var gz, lzb bytes.Buffer
	member := compressed(t, 1, zeros)
	frame := compressed(t, 4, zeros)
	zw := new(bytes.Buffer)
	lw := lz4.NewWriter(&lzb)
	for range 1024 {
		gz.Write(member)
		zw.Write(frame)
		lw.Write(zeros)
	}
	lw.Close()
	// Snappy's format bounds a block's ratio (about 21:1), so its bomb is a
	// block announcing more than the cap.
	big := snappy.Encode(nil, make([]byte, 4*limit))
	bombs := []struct {
		name    string
		codec   int16
		section []byte
		// window is what the codec itself holds whatever the cap: lz4
		// block buffers (up to 4 MiB blocks), the zstd window (up to
		// maxZstdWindow).
		window uint64
	}{
		{"gzip", 1, gz.Bytes(), 0},
		{"lz4", 3, lzb.Bytes(), 2 * 4 << 20},
		{"zstd", 4, zw.Bytes(), 2 * maxZstdWindow},
		{"snappy", 2, big, 0},
		{"snappy xerial", 2, xerialFrame(make([]byte, 4*limit), 1<<20), 0},
	}
	for _, bb := range bombs {
		t.Run(bb.name, func(t *testing.T) {
			batch := compressedBatch(bb.codec, 1000, bb.section)
			d := New(nil, Options{Records: 5, MaxDecompressedBytes: limit})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			bs, err := d.appendBatches(nil, batch, "t", [16]byte{}, 0)
			runtime.ReadMemStats(&after)
			if err != nil || len(bs) != 1 {
				t.Fatalf("batch lost: %d, %v", len(bs), err)
			}
			if s := d.Stats(); s.DecompressTruncated != 1 {
				t.Errorf("stats %+v, want one truncated", s)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*limit+bb.window {
				t.Errorf("allocated %d bytes for a cap of %d", alloc, limit)
			}
		})
	}
}

// TestNoDecompressorGoroutines: the zstd decoder starts no goroutine.
func TestNoDecompressorGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 10 {
		d := New(nil, Options{Records: 1})
		d.appendBatches(nil, compressedBatch(4, 3, compressed(t, 4, testRecords(3))), "t", [16]byte{}, 0)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines %d -> %d", before, after)
	}
}

// BenchmarkRecords: reading the first 5 records of a 100-record batch, per
// codec, with the decompressors reused.
func BenchmarkRecords(b *testing.B) {
	plain := testRecords(100)
	for codec := int16(0); codec <= 4; codec++ {
		raw := compressedBatch(codec, 100, compressed(b, codec, plain))
		b.Run(fmt.Sprint(codec), func(b *testing.B) {
			d := New(nil, Options{Records: 5})
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				d.appendBatches(nil, raw, "t", [16]byte{}, 0)
			}
		})
	}
}
