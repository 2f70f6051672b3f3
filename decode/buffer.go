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
	grown := make([]byte, len(dir.buf), n)
	copy(grown, dir.buf)
	dir.buf = grown
	c.track(dir)
	return true
}

// track brings Decoder.held up to date with dir.buf's capacity.
func (c *Conn) track(dir *direction) {
	c.d.held += int64(cap(dir.buf) - dir.held)
	dir.held = cap(dir.buf)
}

// release gives up dir.buf.
func (c *Conn) release(dir *direction) {
	dir.buf = nil
	c.track(dir)
}

// idle is called once dir.buf is empty: it keeps the buffer for the next
// frame only while it is small and the Decoder's partial frames hold less
// than a quarter of their bound.
func (c *Conn) idle(dir *direction) {
	if cap(dir.buf) > keepBufBytes || c.d.held > c.d.opts.MaxBufferedFrameBytes/4 {
		c.release(dir)
	}
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
