package gencap

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is the compression codec in a record batch's attribute bits 0-2.
type Codec int16

// Codecs as Kafka numbers them.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// compressor compresses records the way Kafka clients do: gzip streams,
// raw snappy blocks (as franz-go writes them), LZ4 frames and zstd frames.
// Every codec runs single-threaded so the output depends on the input only.
type compressor struct {
	buf  bytes.Buffer
	gz   *gzip.Writer
	lz   *lz4.Writer
	zstd *zstd.Encoder
}

func newCompressor() (*compressor, error) {
	c := new(compressor)
	gz, err := gzip.NewWriterLevel(&c.buf, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("gencap: gzip writer: %w", err)
	}
	c.gz = gz
	c.lz = lz4.NewWriter(&c.buf)
	if err := c.lz.Apply(lz4.ConcurrencyOption(1), lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lz4.Fast)); err != nil {
		return nil, fmt.Errorf("gencap: lz4 writer: %w", err)
	}
	c.zstd, err = zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(64<<10),
		zstd.WithZeroFrames(true))
	if err != nil {
		return nil, fmt.Errorf("gencap: zstd writer: %w", err)
	}
	return c, nil
}

// compress returns src compressed with codec in a new slice.
func (c *compressor) compress(codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append([]byte(nil), src...), nil
	case CodecSnappy:
		return snappy.Encode(nil, src), nil
	case CodecZstd:
		return c.zstd.EncodeAll(src, nil), nil
	}
	c.buf.Reset()
	var err error
	switch codec {
	case CodecGzip:
		c.gz.Reset(&c.buf)
		if _, err = c.gz.Write(src); err == nil {
			err = c.gz.Close()
		}
	case CodecLZ4:
		c.lz.Reset(&c.buf)
		if _, err = c.lz.Write(src); err == nil {
			err = c.lz.Close()
		}
	default:
		return nil, fmt.Errorf("gencap: unknown codec %d", codec)
	}
	if err != nil {
		return nil, fmt.Errorf("gencap: compress codec %d: %w", codec, err)
	}
	return append([]byte(nil), c.buf.Bytes()...), nil
}
