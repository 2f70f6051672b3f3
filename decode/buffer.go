package decode

// Partial frames are bounded over all connections. A direction buffers the
// start of a frame whose end is still to come (or, while resyncing, a
// candidate frame start); one such frame is bounded by
// Options.MaxFrameBytes, but many connections each holding part of a large
// frame that never ends would add up without bound. So the capacity of
// every direction's buffer is counted in Decoder.held, buffers grow only
// through grow, geometrically and never past the frame's own size, and a
// growth that would take held beyond Options.MaxBufferedFrameBytes is
// refused: the connection's partial frame is dropped and its direction
// resyncs at a later segment, as after a Gap (Stats.BufferDrops). A buffer
// left empty is kept for the direction's next frame only while it is small
// and the Decoder holds little, so that idle connections do not keep the
// room that partial frames need.

// minGrow is the smallest buffer grow makes.
const minGrow = 512

// Reusing the room of large frames. A frame that spans segments is copied
// into its direction's buffer; a buffer made anew for every large frame
// (most produce requests of a busy producer span tens to thousands of
// segments) costs more than the copy itself: the memory is cleared when
// made, copied again at every doubling, and collected. So a buffer is cut
// from a larger array (direction.arr) that outlives its frame: grown
// within it without a copy, handed back to the Decoder's spares when the
// frame is done (or, a large produce request's, lent to its exchange and
// handed back once that is done: lend.go), and taken by the next large
// frame of any connection.
// What the bound counts (held) is unchanged: a direction is charged the
// capacity it would have had with buffers of its own, so the same frames
// are refused; the arrays' room beyond it (the spares, and the part of an
// array past its buffer) is bounded apart, by half of
// Options.MaxBufferedFrameBytes (spareBudget), and a frame whose size is
// known takes the spare that holds it whole, so that it grows in place.
// A new array is as large as the buffer, an eighth more when large
// (arraySize): what a frame start makes stays bounded by the bytes it
// brought, whatever its size field says.
const maxSpares = 8 // arrays kept for reuse, at most

// spareBudget is the room the Decoder's arrays may hold beyond what held
// counts.
func (d *Decoder) spareBudget() int64 { return d.opts.MaxBufferedFrameBytes / 2 }

// arraySize is the size of an array made for a buffer of n bytes: n, or
// from largeArray on an eighth more, rounded up to arrayRound, so that
// frames of a producer, of about the same size but rarely the same, find
// a spare that holds them.
func arraySize(n int) int {
	if n < largeArray {
		return n
	}
	return (n + n/8 + arrayRound - 1) / arrayRound * arrayRound
}

const (
	largeArray = 1 << 20
	arrayRound = 256 << 10
)

// grow makes room in dir.buf for extra more bytes, within the Decoder's
// bound on partial-frame bytes; want, when not 0, is the length the buffer
// will have once its frame is whole, beyond which it never grows. It
// reports false, changing nothing, when the bound refuses the room.
func (c *Conn) grow(dir *direction, extra, want int) bool {
	need := len(dir.buf) + extra
	if need <= cap(dir.buf) {
		return true
	}
	n := max(2*cap(dir.buf), need, minGrow)
	if want >= need {
		n = min(n, want)
	}
	d := c.d
	if d.held-int64(cap(dir.buf))+int64(n) > d.opts.MaxBufferedFrameBytes {
		return false
	}
	if cap(dir.arr) >= n { // within its array: nothing moves
		dir.buf = dir.arr[:len(dir.buf):n]
		c.track(dir)
		return true
	}
	arr := d.takeSpare(n, want)
	if arr == nil {
		arr = make([]byte, arraySize(n))
	}
	copy(arr, dir.buf)
	old := dir.arr
	dir.arr, dir.buf = arr, arr[:len(dir.buf):n]
	c.track(dir)
	d.putSpare(old, keepBufBytes)
	return true
}

// track brings Decoder.held and spareBytes up to date with dir's buffer
// and array.
func (c *Conn) track(dir *direction) {
	c.d.held += int64(cap(dir.buf) - dir.held)
	dir.held = cap(dir.buf)
	excess := 0
	if dir.arr != nil {
		excess = cap(dir.arr) - cap(dir.buf)
	}
	c.d.spareBytes += int64(excess - dir.excess)
	dir.excess = excess
}

// release gives up dir.buf, its array kept as a spare when there is room.
func (c *Conn) release(dir *direction) {
	arr := dir.arr
	c.forget(dir)
	c.d.putSpare(arr, keepBufBytes)
}

// forget gives up dir.buf and its array, for good: its bytes may still be
// read (a candidate frame becoming the frame).
func (c *Conn) forget(dir *direction) {
	dir.scan.quit()
	dir.buf, dir.arr = nil, nil
	c.track(dir)
}

// idle is called once dir.buf is empty: it keeps the buffer for the next
// frame only while it is small and the Decoder's partial frames hold less
// than a quarter of their bound; a large one's array goes to the spares.
func (c *Conn) idle(dir *direction) {
	if cap(dir.buf) > keepBufBytes || c.d.held > c.d.opts.MaxBufferedFrameBytes/4 {
		c.release(dir)
	}
}

// takeSpare returns a spare array of at least n bytes, or nil: the
// smallest that holds want bytes (the whole frame, when its size is known),
// else the largest.
func (d *Decoder) takeSpare(n, want int) []byte {
	best := -1
	for i, a := range d.spares {
		if cap(a) < n {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		c, b := cap(a), cap(d.spares[best])
		if b < want && c > b || c >= want && c < b {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	a := d.removeSpare(best)
	return a[:cap(a)]
}

// putSpare keeps arr, given up by its direction or by the exchange it was
// lent to (lend.go), for reuse if it holds more than least bytes and the
// spares have room; else it is left to the collector.
func (d *Decoder) putSpare(arr []byte, least int) {
	if cap(arr) <= least {
		return
	}
	for len(d.spares) >= maxSpares || d.spareBytes+int64(cap(arr)) > d.spareBudget() {
		if !d.dropSpare(cap(arr)) {
			return
		}
	}
	d.spares = append(d.spares, arr)
	d.spareBytes += int64(cap(arr))
}

// dropSpare lets the smallest spare smaller than n go, making room for a
// larger one, and reports whether there was one.
func (d *Decoder) dropSpare(n int) bool {
	small := -1
	for i, a := range d.spares {
		if cap(a) < n && (small < 0 || cap(a) < cap(d.spares[small])) {
			small = i
		}
	}
	if small < 0 {
		return false
	}
	d.removeSpare(small)
	return true
}

// removeSpare takes spare i out of the spares and returns it.
func (d *Decoder) removeSpare(i int) []byte {
	a := d.spares[i]
	last := len(d.spares) - 1
	d.spares[i], d.spares[last] = d.spares[last], nil
	d.spares = d.spares[:last]
	d.spareBytes -= int64(cap(a))
	return a
}

// overflow drops the partial frame of dir, synced, which could not grow:
// the partial frames of all connections are at their bound. rest is how
// many bytes of the current Data call were not taken into it. The direction
// resyncs as after a Gap.
func (c *Conn) overflow(dir *direction, rest int) {
	c.d.stats.BufferDrops++
	c.d.stats.DroppedBytes += int64(rest)
	c.lose(dir)
	c.release(dir)
}

// BufferedFrameBytes returns the bytes the Decoder's connections hold for
// partial frames (buffer capacity), at most Options.MaxBufferedFrameBytes.
func (d *Decoder) BufferedFrameBytes() int64 { return d.held }
