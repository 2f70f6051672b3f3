package capture

import (
	"io"
	"sync/atomic"
)

// A capture's stream (the file, or its decompressor's output) is read on a
// goroutine of its own once the merge reads it ahead (Source.readAhead):
// into chunks, each handed whole to the Source's buffer (pcapBuf), whose
// records (a pcapng's blocks) are parsed in place there as before. The
// reading (the kernel's copy from the page cache, or the decompression)
// then runs on the other core while this one reassembles and decodes, and
// a decompressor writes into the chunks themselves: no copy between it
// and the parser. A chunk
// keeps pcapBufSize bytes of room in front of what is read into it, where
// the start of a record cut by the chunk's end is moved, so that a record
// of up to pcapBufSize bytes is always whole in one chunk; a larger one is
// read through the buffer as before (readLarge).
//
// A chunk goes back to be filled again once the parser has moved on and
// every Hold on it (Packet.Hold) is released: a caller that decodes on
// another goroutine keeps the packets' bytes there instead of copying
// them. aheadChunks leaves room for the holds of the batches in flight
// (pipeline's splitBatches; fewer chunks only make the reader wait for
// the decoder to release one), up to 5 MiB of a file between the reading
// and the decoding: decoding works in bursts (a large request's batches
// are hashed and its answer detected at its end), and the reading and
// parsing must go on meanwhile. With 6
// chunks, on a real capture of 4 MB requests, the two goroutines took
// turns: analyze at 0.98x the read loop, 1.04x one goroutine; with 16,
// 1.32x and 1.70x. Chunks of 512 KiB, not 256, halve the hand-offs
// between the goroutines (each may wake one, dear on a VM), and 10 of
// them keep the buffers' memory as it was (16 of 256 KiB): on a real 1
// GiB 1500-MTU capture, at a busy moment of the VM, 0.321 s against
// 0.352 s (16 of 512 KiB: 0.369 s, faster only when the VM was quiet,
// 0.213 against 0.229 s), on its 4 MB requests 0.489 against 0.513 s;
// chunks of 1 MiB were slower. A decompressor is slower than decoding,
// bursts and all, so reading further ahead of it gains nothing: it keeps
// 6 (aheadChunksCompressed; with 16, 300 rotated .pcap.gz files peaked 17
// MiB higher, two read ahead at once).
//
// Tried before without the rest of the run on another goroutine: no
// faster, the reading then no longer the part that waits. With decode and
// detect on a second goroutine (pipeline's split) the reading goroutine
// is the busier, and this takes the reads off it.
//
// The chunks are the room for the holds; how far the reading runs ahead
// of the parser is another matter. A file is read at 10 GB/s, faster than
// it is parsed: let free, the goroutine filled every empty chunk, up to 5
// MiB ahead, and its bytes left the core's 1 MiB cache before they were
// parsed and decoded. It now reads at most aheadLead chunks (1 MiB) ahead
// of the parser: on a real 1 GiB 1500-MTU capture, the split at 0.306 s
// and 0.525 s of CPU against 0.331 s and 0.571 s (15 interleaved runs);
// on its 4 MB requests 0.563 against 0.604 s. A decompressor, slower than
// the parser, is never that far ahead: it is not bounded.
//
// aheadChunks is how many chunks there may be, not how many are made: the
// goroutine starts with aheadFirst (the one it reads into, lead chunks
// ahead and the parser's), or as many as the pool holds from an earlier
// file, and makes another only when it finds none free: when Holds keep
// chunks, or a decompressor runs ahead. A run that copies its packets
// (sharded, or on one goroutine) holds none and reads into four, 2.5 MiB
// where all ten were 6.25 MiB: on 100 k half-open connections with
// --records (internal/hostile), 3 MiB less peak RSS.
const (
	aheadChunks           = 10
	aheadChunksCompressed = 6
	aheadLead             = 2
	aheadFirst            = aheadLead + 2
	aheadChunkData        = 512 << 10
	aheadChunkSize        = pcapBufSize + aheadChunkData
)

// AheadHolds is how many Holds on distinct chunks of a plain pcap read
// ahead a caller may keep at once without the Source waiting for one to be
// released: all the chunks but the one the records are parsed in and one
// to read into (a compressed pcap has fewer, aheadChunksCompressed).
// AheadChunkBytes is the most bytes of one chunk: of the packets a Hold
// keeps. A caller that hands packets to another goroutine in batches, a
// Hold each, sizes them by these (pipeline's split).
const (
	AheadHolds      = aheadChunks - 2
	AheadChunkBytes = aheadChunkData
)

// pcapAhead reads a stream into chunks on its own goroutine.
type pcapAhead struct {
	rd      io.Reader
	release func() // run by the goroutine once it reads no more, if set
	pool    *bufPool
	full    chan aheadChunk
	// empty holds the chunks to fill; there is room in it for all, so
	// that a chunk's last release never waits, from any goroutine.
	empty  chan *aheadBuf
	done   chan struct{}
	closed bool
	ended  bool      // the chunk with rd's error was taken
	cur    *aheadBuf // the chunk the buffer holds, to give back
	// handed is the stream offset of the end of the chunks taken: how far
	// the parser may have read (Source.CaptureBytes), read anywhere.
	handed atomic.Int64
	// lead, when set, holds a token for each chunk read and not yet
	// taken: the goroutine reads at most cap(lead) chunks ahead.
	lead chan struct{}
	// more is how many chunks the goroutine may still make, when it finds
	// none to fill: the first few come from the pool, the others only when
	// Holds keep chunks (pipeline's split) or a decompressor runs ahead, so
	// that a run whose packets are copied (sharded) holds no more than it
	// reads into. They go to the pool with the others (drop), and the next
	// file of a merge takes them all from there.
	more int
	// whole: rd is the stream of a regular file, whose reads come short
	// only where a decompressor returns what it has (zstd a block of up
	// to 128 KiB, gzip up to 32 KiB), never because the bytes come
	// slowly: each chunk is handed on full. Else (a pipe, standard input)
	// a short read hands the chunk on at once. Each hand-off may wake the
	// parser's thread, dear on a VM: a compressed file handed on a block
	// at a time took 4 times the hand-offs (8257 for a real 1 GiB
	// capture's .zst, 33020 for its .gz) and the decompressing goroutine
	// 0.07 s in waking the parser alone; handed on whole, analyze of the
	// .zst went from 1.30x the time of `zstd -dc` to 1.20x (11
	// interleaved rounds, medians of the paired ratios), of the .gz from
	// 2.88 s to 2.38 s.
	whole bool
	// check, when rd is a zstd stream, checks its frames on the parser's
	// goroutine, the marks of those in each chunk taken where rd is read
	// (zstdstream.go).
	check *frameCheck
}

// aheadBuf is one chunk of a pcapAhead and the references to it: the
// parser's while it reads there, and the Holds on its packets.
type aheadBuf struct {
	buf  []byte
	refs atomic.Int32
	a    *pcapAhead
}

// unref drops a reference; the last one sends the chunk to be filled again.
func (c *aheadBuf) unref() {
	if c.refs.Add(-1) == 0 {
		c.a.empty <- c
	}
}

type aheadChunk struct {
	c     *aheadBuf // its bytes are c.buf[pcapBufSize:pcapBufSize+n]
	n     int
	err   error
	marks []frameMark // the zstd frames that start and end in it (pcapAhead.check)
}

// startAhead starts reading rd, at stream offset off, into at most n
// chunks: aheadFirst, or as many as pool has (from pool, made anew when it
// has none), the others made when needed; at most lead chunks ahead of
// those taken (0: as far as the chunks go); release, if set, runs once rd
// is read no more; whole: rd is a regular file's stream, each chunk handed
// on full (pcapAhead.whole); check, if set, checks rd's zstd frames on
// the parser's goroutine (pcapAhead.check).
func startAhead(rd io.Reader, release func(), pool *bufPool, off int64, n, lead int, whole bool, check *frameCheck) *pcapAhead {
	a := &pcapAhead{rd: rd, release: release, pool: pool, whole: whole, check: check,
		full: make(chan aheadChunk, n), empty: make(chan *aheadBuf, n), done: make(chan struct{})}
	if lead > 0 {
		a.lead = make(chan struct{}, lead)
	}
	a.handed.Store(off)
	first := min(n, max(aheadFirst, pool.len()))
	for range first {
		a.empty <- &aheadBuf{buf: pool.get(), a: a}
	}
	a.more = n - first
	go a.run()
	return a
}

// nextEmpty returns a chunk to fill: an empty one, else a new one while
// more may be made, else the next one given back; nil once closed. The
// pool is the reading goroutine's: the chunks made here are new.
func (a *pcapAhead) nextEmpty() *aheadBuf {
	select {
	case c := <-a.empty:
		return c
	default:
	}
	if a.more > 0 {
		a.more--
		return &aheadBuf{buf: make([]byte, aheadChunkSize), a: a}
	}
	select {
	case c := <-a.empty:
		return c
	case <-a.done:
		return nil
	}
}

// run reads rd into empty chunks until rd's first error or Close. A read
// shorter than asked from a pipe hands the chunk on at once, so that bytes
// that come slowly are parsed as they come; a regular file's chunks are
// handed on full (whole).
func (a *pcapAhead) run() {
	if a.release != nil {
		defer a.release()
	}
	for {
		if a.lead != nil {
			select {
			case a.lead <- struct{}{}:
			case <-a.done:
				return
			}
		}
		c := a.nextEmpty()
		if c == nil {
			return
		}
		n, err := readChunk(a.rd, c.buf[pcapBufSize:pcapBufSize+aheadChunkData], a.whole)
		c.refs.Store(1) // the parser's
		select {
		case a.full <- aheadChunk{c: c, n: n, err: err, marks: a.check.marks()}:
		case <-a.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// next returns the next chunk and the one it replaces (nil at the first),
// to unref once nothing is read from it any more.
func (a *pcapAhead) next() (aheadChunk, *aheadBuf) {
	c := <-a.full // the goroutine sends until it has sent rd's error
	if a.lead != nil {
		<-a.lead // the goroutine took it before it read c
	}
	old := a.cur
	a.cur = c.c
	if c.err != nil {
		a.ended = true
	}
	return c, old
}

// drop lets the chunks go to the pool once rd's error was taken: the
// goroutine has stopped. Chunks still held come back later to empty, and
// go with the pcapAhead.
func (a *pcapAhead) drop() {
	if !a.ended || a.cur == nil {
		return
	}
	a.cur.unref()
	a.cur = nil
	for len(a.empty) > 0 {
		a.pool.put((<-a.empty).buf)
	}
	// The goroutine read rd last before it sent the error, and took its
	// release when it started: let the decompressor go.
	a.rd, a.check, a.release = nil, nil, nil
}

// Close stops the reading without waiting for it (the goroutine may be
// blocked in rd.Read).
func (a *pcapAhead) Close() {
	if a.closed {
		return
	}
	a.closed = true
	close(a.done)
}

// fillAhead is pcapBuf.fill from the chunks: buf[r:w], shorter than
// pcapBufSize (see fill), is moved to the room in front of the next
// chunk's bytes. A chunk of a zstd stream is checked first (frameCheck):
// its bytes up to the end of a frame whose checksum is wrong are parsed,
// then the error returned.
func (b *pcapBuf) fillAhead() {
	c, old := b.ahead.next()
	if fc := b.ahead.check; fc != nil {
		if n, err := fc.check(c.c.buf[pcapBufSize:pcapBufSize+c.n], c.marks); err != nil {
			c.n, c.err = n, codecError("zstd", err) // fill is not called after b.err
		}
	}
	left := b.buf[b.r:b.w]
	start := pcapBufSize - len(left)
	buf := c.c.buf
	copy(buf[start:pcapBufSize], left)
	if old != nil {
		old.unref() // the parser's reference: its bytes left are moved
	}
	b.buf, b.r, b.w = buf, start, pcapBufSize+c.n
	b.off += int64(c.n)
	b.ahead.handed.Store(b.off)
	if c.err != nil {
		b.err = c.err
	}
}

// Hold keeps the bytes of a packet read ahead (Packet.Hold) from being
// overwritten until Release. The zero Hold holds nothing; Holds compare
// equal when they hold the same chunk of bytes.
type Hold struct{ c *aheadBuf }

// Hold keeps p.Data valid past the next call to Next, until the Hold is
// released, and reports whether it can: only the Data of a packet parsed
// in place in a chunk read ahead can be kept (MergeOptions.ReadAheadPlain,
// or a compressed capture); copy the others (a pcapng block that pcapgo
// read, a packet larger than the Source's buffer). A Hold covers every
// packet of its chunk: one taken per chunk is enough.
func (p Packet) Hold() (Hold, bool) {
	if p.chunk == nil {
		return Hold{}, false
	}
	p.chunk.refs.Add(1)
	return Hold{p.chunk}, true
}

// Holds reports whether h holds p's bytes, with no new Hold.
func (h Hold) Holds(p Packet) bool { return h.c != nil && h.c == p.chunk }

// Release lets the bytes go; it may be called from any goroutine, once.
func (h Hold) Release() {
	if h.c != nil {
		h.c.unref()
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
