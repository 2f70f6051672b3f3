package capture

import (
	"errors"
	"fmt"
	"io"
)

// ErrNotCapture is wrapped by an InputError for input that is neither pcap
// nor pcapng (after any gzip or zstd layer is removed).
var ErrNotCapture = errors.New("not a capture file")

// ErrEmpty is wrapped by an InputError for input that holds no byte at all.
var ErrEmpty = errors.New("empty file")

// InputError is every error a Source returns but io.EOF. It names the input
// and how far into it reading got.
//
// Offset counts the bytes of the capture stream consumed up to the end of the
// last packet read whole (the file header when no packet was read). For a
// gzip or zstd input it counts decompressed bytes, and Error says so.
type InputError struct {
	File   string
	Offset int64
	Err    error

	// codec is "gzip" or "zstd" when Offset counts decompressed bytes.
	codec string
	// header is set for errors about the input as a whole (empty, not a
	// capture, bad file header), whose message needs no position.
	header bool
}

func (e *InputError) Error() string {
	where := "byte"
	if e.codec != "" {
		where = "decompressed byte"
	}
	switch {
	case e.header:
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case errors.Is(e.Err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("%s: truncated at %s %d: %v", e.File, where, e.Offset, e.Err)
	default:
		return fmt.Sprintf("%s: bad capture data after %s %d: %v", e.File, where, e.Offset, e.Err)
	}
}

// Decompressed reports whether Offset counts decompressed bytes (of a
// gzip or zstd capture).
func (e *InputError) Decompressed() bool { return e.codec != "" }

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }
