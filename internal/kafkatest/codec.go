package kafkatest

import "fmt"

// Codec is a record batch compression codec, numbered as in the batch's
// attributes.
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLz4    Codec = 3
	CodecZstd   Codec = 4
)

// Codecs lists every codec, CodecNone first.
var Codecs = [...]Codec{CodecNone, CodecGzip, CodecSnappy, CodecLz4, CodecZstd}

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLz4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}
