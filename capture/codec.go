package capture

import (
	"errors"
	"io"
)

// errClosed is what codecReader.Read returns after Close.
var errClosed = errors.New("capture: read after close")

// codecReader is a compressed capture's decompressor (gzip or zstd). The
// Source reads it in Read while it reads the file header and, unless a
// merge reads the capture ahead, every packet; a merge that reads it ahead
// takes it over whole (detach): the goroutine that reads ahead then
// decompresses straight into the chunks the packets are parsed in
// (pcapahead.go). release, if any, runs once the decompressor is read no
// more: at Close, or, taken over, when that goroutine stops.
type codecReader struct {
	r       io.Reader
	release func()
	closed  bool
	err     error // r's first error
}

func newCodecReader(r io.Reader, release func()) *codecReader {
	return &codecReader{r: r, release: release}
}

func (c *codecReader) Read(p []byte) (int, error) {
	if c.closed {
		return 0, errClosed
	}
	n, err := c.r.Read(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// detach hands r and its release over to another reader, as long as r has
// not ended (nor Close been called): Read is not called any more, and
// Close releases nothing.
func (c *codecReader) detach() (io.Reader, func(), bool) {
	if c.closed || c.err != nil {
		return nil, nil, false
	}
	r, rel := c.r, c.release
	c.r, c.release, c.closed = nil, nil, true
	return r, rel, true
}

// Close stops reading r and releases it, unless it was handed over; Read
// returns errClosed after it.
func (c *codecReader) Close() {
	if c.closed {
		return
	}
	c.closed = true
	if c.release != nil {
		c.release()
	}
}
