package capture

import "io"

// A compressed capture is decompressed on a goroutine of its own, ahead of
// the packets being read, so that the second core decompresses while the
// first reassembles and decodes: gzip runs at a few hundred MB/s, slower
// than all that follows it. Four buffers of 128 KiB (512 KiB a compressed
// file): smaller ones hand over too often to gain anything (measured on
// the 100 MB bench capture, zstd: 64 KiB none, 128 KiB and 256 KiB 20%, two
// buffers of 256 KiB 5%). An uncompressed file is not read ahead: the
// hand-over and the extra copy cost what the overlapped read saves.
const (
	readAheadBuffers = 4
	readAheadSize    = 1 << 17
)

// readAhead reads r on its own goroutine into a few buffers, handed to Read
// in order. Read returns every byte r gave before the error r returned,
// then that error. Close stops the goroutine without waiting for it (it may
// be blocked in r.Read, as on a pipe): the goroutine runs release, if any,
// when it stops, so that r is released by the one goroutine that reads it.
type readAhead struct {
	full  chan chunk    // filled buffers, in order
	empty chan []byte   // buffers to fill
	done  chan struct{} // closed by Close
	cur   []byte        // the unread part of the chunk being read
	buf   []byte        // that chunk's buffer, to give back
	err   error         // r's error after the chunk being read
}

type chunk struct {
	b   []byte
	err error
}

func newReadAhead(r io.Reader, release func()) *readAhead {
	ra := &readAhead{
		full:  make(chan chunk, readAheadBuffers),
		empty: make(chan []byte, readAheadBuffers),
		done:  make(chan struct{}),
	}
	for range readAheadBuffers {
		ra.empty <- make([]byte, readAheadSize)
	}
	go ra.fill(r, release)
	return ra
}

// fill reads r into empty buffers until r's first error or Close.
func (ra *readAhead) fill(r io.Reader, release func()) {
	if release != nil {
		defer release()
	}
	for {
		var buf []byte
		select {
		case buf = <-ra.empty:
		case <-ra.done:
			return
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[n:])
			n += m
		}
		select {
		case ra.full <- chunk{b: buf[:n], err: err}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.empty <- ra.buf[:cap(ra.buf)] // never blocks: there is room for every buffer
			ra.buf = nil
		}
		if ra.err != nil {
			return 0, ra.err
		}
		c := <-ra.full
		ra.cur, ra.buf, ra.err = c.b, c.b, c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Close stops the goroutine; Read must not be called after it.
func (ra *readAhead) Close() {
	select {
	case <-ra.done:
	default:
		close(ra.done)
	}
}
