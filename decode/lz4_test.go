package decode

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// TestLZ4Frames: frames as pierrec/lz4 writes them (franz-go's codec), of
// every block size, with and without block and content checksums and
// content size, decompress to their bytes; under a cap, to the cap's
// prefix, marked truncated; and a frame header naming 4 MiB blocks costs
// no 4 MiB buffer.
func TestLZ4Frames(t *testing.T) {
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 7 / 13)
	}
	sizes := []lz4.BlockSize{lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb}
	for _, size := range sizes {
		for _, sums := range []bool{false, true} {
			t.Run(fmt.Sprint(size, " checksums ", sums), func(t *testing.T) {
				var buf bytes.Buffer
				w := lz4.NewWriter(&buf)
				opts := []lz4.Option{lz4.BlockSizeOption(size), lz4.BlockChecksumOption(sums), lz4.ChecksumOption(sums)}
				if sums {
					opts = append(opts, lz4.SizeOption(uint64(len(data))))
				}
				if err := w.Apply(opts...); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(data); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				var c codecs
				out, truncated, err := c.lz4Frame(buf.Bytes(), 1<<20)
				if err != nil || truncated || !bytes.Equal(out, data) {
					t.Fatalf("whole: %d bytes, truncated %v, %v", len(out), truncated, err)
				}
				out, truncated, err = c.lz4Frame(buf.Bytes(), 100<<10)
				if err != nil || !truncated || !bytes.Equal(out, data[:len(out)]) || len(out) > 100<<10 {
					t.Fatalf("capped: %d bytes, truncated %v, %v", len(out), truncated, err)
				}
			})
		}
	}
	for _, tt := range []struct {
		name  string
		frame []byte
	}{
		{"4 MiB blocks announced, none there", []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x70, 0x73}},
		{"4 MiB blocks announced, one of 4 bytes", []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x70, 0x73, 4, 0, 0, 0, 0x40, 'a', 'b', 'c', 0, 0, 0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c codecs
			n := allocated(func() { _, _, _ = c.lz4Frame(tt.frame, 16<<20) })
			if n > 64<<10 {
				t.Errorf("allocated %d bytes for a %d-byte frame", n, len(tt.frame))
			}
		})
	}
}
