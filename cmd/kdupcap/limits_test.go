package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/klauspost/compress/zstd"
)

// zeroCapture writes a .zst pcap holding a real capture's packets and then
// n bytes of zeros (zero-length records): a small file that expands far
// beyond its size.
func zeroCapture(t *testing.T, real string, n int64) string {
	t.Helper()
	pkts, _ := readCapture(t, real)
	path := filepath.Join(t.TempDir(), "zeros.pcap.zst")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, err := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint32(b, 0xffff)
	b = le.AppendUint32(b, uint32(layers.LinkTypeEthernet))
	for _, p := range pkts {
		if p.link != layers.LinkTypeEthernet {
			t.Fatalf("%s: link type %v", real, p.link)
		}
		ts := p.ci.Timestamp
		b = le.AppendUint32(b, uint32(ts.Unix()))
		b = le.AppendUint32(b, uint32(ts.Nanosecond()/1000))
		b = le.AppendUint32(b, uint32(len(p.data)))
		b = le.AppendUint32(b, uint32(p.ci.Length))
		b = append(b, p.data...)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for ; n > 0; n -= int64(len(zeros)) {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMaxInputBytes: a compressed capture expanding to far more than its
// size stops at --max-input-bytes of capture with exit 0, the findings of
// the packets before it, and the summary saying where it stopped; without
// the flag, the same file read to its end says nothing of a limit.
func TestMaxInputBytes(t *testing.T) {
	real := filepath.Join("..", "..", "testdata", "kcat-nonidempotent-timeout.pcap")
	path := zeroCapture(t, real, 96<<20)
	if st, _ := os.Stat(path); st.Size() > 1<<20 {
		t.Fatalf("%s: %d bytes, want a small file", path, st.Size())
	}
	want, _ := analyzeLines(t, real)
	for _, workers := range []string{"1", "2"} {
		got, sum := analyzeLines(t, path, "--workers", workers, "--max-input-bytes", "32MiB")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("workers %s: findings differ:\n%s\nwant:\n%s", workers, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		limit, _ := sum["input_limit_bytes"].(float64)
		if limit < 32<<20 || limit > 40<<20 {
			t.Errorf("workers %s: input_limit_bytes %v, want about 32 MiB", workers, sum["input_limit_bytes"])
		}
	}
	_, sum := analyzeLines(t, path)
	if _, ok := sum["input_limit_bytes"]; ok {
		t.Errorf("read to its end, the summary says input_limit_bytes %v", sum["input_limit_bytes"])
	}
}

// TestDecompressBudget: the budget is --decompress-budget times the input
// files' size, at least minBudget, and decode's default from standard
// input.
func TestDecompressBudget(t *testing.T) {
	tests := []struct {
		ratio float64
		size  int64
		want  int64
	}{
		{64, 1 << 20, minBudget},
		{64, 1 << 30, 64 << 30},
		{2, 1 << 30, 2 << 30},
		{64, -1, 0},
	}
	for _, tt := range tests {
		if got := decompressBudget(tt.ratio, tt.size); got != tt.want {
			t.Errorf("decompressBudget(%v, %d) = %d, want %d", tt.ratio, tt.size, got, tt.want)
		}
	}
}
