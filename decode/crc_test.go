package decode

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// TestBatchCRC: a RecordBatch or a legacy message whose CRC does not match
// its bytes is Corrupt, counted, and left out of fetched evidence; the
// fingerprint covers every byte under the CRC.
func TestBatchCRC(t *testing.T) {
	d := New(nil, Options{})
	walk := func(t *testing.T, records []byte) Batch {
		t.Helper()
		bs, err := d.appendBatches(nil, records, "t", [16]byte{}, 0)
		if err != nil || len(bs) != 1 {
			t.Fatalf("%d batches, %v", len(bs), err)
		}
		return bs[0]
	}
	payload := string(bytes.Repeat([]byte("0123456789"), 100))
	for _, tt := range []struct {
		name string
		good []byte
		at   int // a byte under the CRC, flipped
	}{
		{"record batch", recordBatch(-1, -1, -1, 1, payload), 61 + 500},
		{"record batch header", recordBatch(-1, -1, -1, 1, payload), 21},
		{"legacy v0", legacySet(0, 0, 3, payload), 2*(12+14+len(payload)) + 100},
		{"legacy v1 timestamp", legacySet(1, 0, 3, payload), 12 + 4 + 2 + 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			good := walk(t, tt.good)
			if good.Corrupt {
				t.Fatal("a batch with the right CRC taken as corrupt")
			}
			bad := bytes.Clone(tt.good)
			bad[tt.at] ^= 0x40
			got := walk(t, bad)
			if !got.Corrupt {
				t.Error("a flipped byte under the CRC not taken as corrupt")
			}
			if got.Hash == good.Hash {
				t.Error("a flipped byte leaves the fingerprint as it was")
			}
			if fb := d.fetchedBatches(tt.good); len(fb) != 1 {
				t.Errorf("fetched: %d batches kept, want 1", len(fb))
			}
			if fb := d.fetchedBatches(bad); len(fb) != 1 || !fb[0].Corrupt {
				t.Errorf("fetched corrupt: %d batches, want 1 marked corrupt (no evidence for detect)", len(fb))
			}
		})
	}
	// Counted in Stats when produced.
	dd := New(nil, Options{})
	bad := recordBatch(-1, -1, -1, 1, payload)
	bad[100] ^= 1
	script := []msg{{fromClient: true, frame: requestFrame(produceRequest(9, 0, part{"t", 0, bad}, part{"t", 1, recordBatch(-1, -1, -1, 1, payload)}), 1, "c")}}
	feed(dd, script, whole, false)
	if st := dd.Stats(); st.CorruptBatches != 1 || st.Batches != 2 {
		t.Errorf("%d of %d batches corrupt, want 1 of 2", st.CorruptBatches, st.Batches)
	}
}

// TestBatchSums: batchSums gives the CRC-32C and XXH3-64 of the whole, at
// every length around the hash's internal block sizes, and allocates
// nothing.
func TestBatchSums(t *testing.T) {
	p := make([]byte, 3<<13+7)
	for i := range p {
		p[i] = byte(i * 7919 >> 3)
	}
	for _, n := range []int{0, 1, 16, 17, 128, 129, 240, 241, 1023, 1024, 1025, 8 << 10, len(p)} {
		crc, h := batchSums(p[:n])
		if crc != crc32.Checksum(p[:n], castagnoli) || h != xxh3.Hash(p[:n]) {
			t.Errorf("%d bytes: sums %08x %016x, want %08x %016x", n, crc, h, crc32.Checksum(p[:n], castagnoli), xxh3.Hash(p[:n]))
		}
	}
	if n := testing.AllocsPerRun(10, func() { batchSums(p) }); n != 0 {
		t.Errorf("%v allocations per batch", n)
	}
}

// BenchmarkBatchSums measures what the CRC check and the full fingerprint
// cost per batch byte: batchSums (CRC-32C and XXH3-64, each over the whole),
// against one pass over 8 KiB chunks handed to both in turn, and against the
// xxhash64 fingerprint batch.go used before.
func BenchmarkBatchSums(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 1 << 20} {
		p := bytes.Repeat([]byte{1, 2, 3, 5, 7, 11, 13}, size/7+1)[:size]
		b.Run(fmt.Sprintf("batchSums/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for range b.N {
				batchSums(p)
			}
		})
		b.Run(fmt.Sprintf("chunked/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			var h xxh3.Hasher
			for range b.N {
				h.Reset()
				var crc uint32
				for q := p; len(q) > 0; {
					n := min(len(q), 8<<10)
					crc = crc32.Update(crc, castagnoli, q[:n])
					h.Write(q[:n])
					q = q[n:]
				}
				_, _ = crc, h.Sum64()
			}
		})
		b.Run(fmt.Sprintf("xxhash64/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for range b.N {
				crc32.Checksum(p, castagnoli)
				xxhash.Sum64(p)
			}
		})
	}
}
