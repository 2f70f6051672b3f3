package capture

import (
	"errors"
	"io"
)

// A compressed capture can be decompressed on a goroutine of its own, ahead
// of the packets being read, so that the second core decompresses while the
// first reassembles and decodes: gzip runs at a few hundred MB/s, slower
// than all that follows it. Four buffers of 512 KiB (2 MiB a file while it
// is read ahead): smaller ones hand over too often (measured on the 100 MB
// bench capture, zstd: 64 KiB gained nothing, 128 KiB and 256 KiB 20%, two
// buffers of 256 KiB 5%). Every hand-over may wake the parser's thread,
// dear on a VM: on a real 1 GiB capture as pcapng, 512 KiB against 128 KiB
// took analyze of its .zst from 1.31 to 1.21 s and from 1.64 to 1.52 s
// (medians of 9 interleaved rounds, two quarter hours), of its .gz from
// 2.80 to 2.60 s, at the same peak RSS (55 MiB); a pcap's chunks are as
// large (pcapahead.go). An uncompressed pcapng is not read ahead: the
// hand-over and the extra copy cost what the overlapped read saves.
const (
	readAheadBuffers = 4
	readAheadSize    = 1 << 19
)

// errClosed is what Read returns after Close.
var errClosed = errors.New("capture: read after close")

// readAhead reads r, at first directly in Read; once started, on its own
// goroutine into a few buffers, handed to Read in order. Either way Read
// returns every byte r gave before the error r returned, then that error.
// Buffers are made when it starts and dropped once Read has returned r's
// error, so that a file read to its end holds none. Close stops the
// goroutine without waiting for it (it may be blocked in r.Read, as on a
// pipe); release, if any, runs once r is no longer read: at Close before
// the start, else when the goroutine stops.
type readAhead struct {
	r       io.Reader
	release func()
	pool    *bufPool // where the buffers come from and go back to, if any
	started bool
	closed  bool
	full    chan chunk    // filled buffers, in order
	empty   chan []byte   // buffers to fill
	done    chan struct{} // closed by Close once started
	cur     []byte        // the unread part of the chunk being read
	buf     []byte        // that chunk's buffer, to give back
	err     error         // r's error after the chunk being read
	// whole: r is a regular file's stream, each buffer handed on full;
	// else a short read hands it on at once (readChunk).
	whole bool
	// check, when r is a zstd stream, checks its frames in Read, on the
	// reader's goroutine, the ends of those in each buffer taken where r
	// is read (zstdstream.go).
	check *frameCheck
	// bad is a checksum that check found wrong, returned once the bytes
	// before it are read; the goroutine may read on until Close.
	bad error
}

type chunk struct {
	b    []byte
	err  error
	ends []frameEnd // the zstd frames that end in it (readAhead.check)
}

func newReadAhead(r io.Reader, release func()) *readAhead {
	return &readAhead{r: r, release: release}
}

// active reports whether the goroutine reads ahead: started, and neither
// closed nor ended.
func (ra *readAhead) active() bool { return ra.started && !ra.closed && ra.full != nil }

// start reads ahead from now on, unless r has ended or Close was called,
// with buffers from pool (made anew when nil or empty); whole: r is a
// regular file's stream (readChunk).
func (ra *readAhead) start(pool *bufPool, whole bool) {
	if ra.started || ra.closed || ra.err != nil {
		return
	}
	ra.started, ra.pool, ra.whole = true, pool, whole
	if z, ok := ra.r.(*zstdStream); ok {
		ra.check = z.deferChecks()
	}
	ra.full = make(chan chunk, readAheadBuffers)
	ra.empty = make(chan []byte, readAheadBuffers)
	ra.done = make(chan struct{})
	for range readAheadBuffers {
		ra.empty <- pool.get()
	}
	go ra.fill()
}

// bufPool keeps the buffers of read-aheads that ended for the next ones: a
// merge of many rotated files reuses a few buffers instead of making four
// for every file. It is used by the reading goroutine only. Its buffers
// are of size bytes (readAheadSize when 0); chunks is the pool of a pcap's
// chunks (pcapahead.go).
type bufPool struct {
	free   [][]byte
	size   int
	chunks *bufPool
}

func (p *bufPool) get() []byte {
	size := readAheadSize
	if p != nil {
		if n := len(p.free); n > 0 {
			b := p.free[n-1]
			p.free = p.free[:n-1]
			return b
		}
		if p.size > 0 {
			size = p.size
		}
	}
	return make([]byte, size)
}

// chunkPool is the pool of a pcap's chunks beside p (a pool of its own
// when p is nil).
func (p *bufPool) chunkPool() *bufPool {
	if p == nil {
		return &bufPool{size: aheadChunkSize}
	}
	if p.chunks == nil {
		p.chunks = &bufPool{size: aheadChunkSize}
	}
	return p.chunks
}

// len is how many buffers p has.
func (p *bufPool) len() int {
	if p == nil {
		return 0
	}
	return len(p.free)
}

func (p *bufPool) put(b []byte) {
	if p != nil {
		p.free = append(p.free, b[:cap(b)])
	}
}

// readChunk reads r into buf until buf is full or r returns an error; a
// read shorter than asked ends it at once (a pipe: bytes that come slowly
// are parsed as they come) unless whole (a regular file's stream, whose
// reads come short only where a decompressor returns what it has). A
// hundred reads in a row that return nothing and no error end it with
// io.ErrNoProgress.
func readChunk(r io.Reader, buf []byte, whole bool) (int, error) {
	n, idle := 0, 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		switch {
		case err != nil:
			return n, err
		case m == 0:
			if idle++; idle >= 100 {
				return n, io.ErrNoProgress
			}
		case !whole && n < len(buf):
			return n, nil // short: hand on what came
		default:
			idle = 0
		}
	}
	return n, nil
}

// fill reads r into empty buffers until r's first error or Close.
func (ra *readAhead) fill() {
	if ra.release != nil {
		defer ra.release()
	}
	for {
		var buf []byte
		select {
		case buf = <-ra.empty:
		case <-ra.done:
			return
		}
		n, err := readChunk(ra.r, buf, ra.whole)
		select {
		case ra.full <- chunk{b: buf[:n], err: err, ends: ra.check.ends()}:
		case <-ra.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	switch {
	case ra.closed:
		return 0, errClosed
	case !ra.started:
		n, err := ra.r.Read(p)
		if err != nil {
			ra.err = err
		}
		return n, err
	}
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.empty <- ra.buf[:cap(ra.buf)] // never blocks: there is room for every buffer
			ra.buf = nil
		}
		if ra.bad != nil {
			return 0, ra.bad
		}
		if ra.err != nil {
			ra.drop()
			return 0, ra.err
		}
		c := <-ra.full // the goroutine sends until it has sent r's error
		if ra.check != nil {
			if n, err := ra.check.check(c.b, c.ends); err != nil {
				ra.cur, ra.buf, ra.bad = c.b[:n], c.b, err // no chunk is taken after bad
				continue
			}
		}
		ra.cur, ra.buf, ra.err = c.b, c.b, c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// drop lets the buffers and r go once r's error has been read: the
// goroutine stopped after sending it (and released r), so that a file read
// to its end holds no memory until it is closed (a merge of many files
// closes them all at its end).
func (ra *readAhead) drop() {
	if ra.empty == nil {
		return
	}
	for len(ra.empty) > 0 {
		ra.pool.put(<-ra.empty)
	}
	ra.empty, ra.full, ra.cur, ra.buf = nil, nil, nil, nil
	ra.r, ra.release, ra.check = nil, nil, nil
}

// detach hands r and its release over to another reader (a pcap's chunks,
// pcapahead.go), as long as reading ahead has not started and r has not
// ended: Read is not called any more, and Close releases nothing.
func (ra *readAhead) detach() (io.Reader, func(), bool) {
	if ra.started || ra.closed || ra.err != nil {
		return nil, nil, false
	}
	r, rel := ra.r, ra.release
	ra.r, ra.release, ra.closed = nil, nil, true
	return r, rel, true
}

// Close stops reading r; Read returns errClosed after it.
func (ra *readAhead) Close() {
	if ra.closed {
		return
	}
	ra.closed = true
	if ra.started {
		close(ra.done)
		return
	}
	if ra.release != nil {
		ra.release()
	}
}
