package decode

import "encoding/binary"

// Frames over Options.MaxHeldFrameBytes are never held whole. The broker
// takes requests up to socket.request.max.bytes (100 MiB by default), so a
// frame that large is valid Kafka, but holding it, and a few like it on
// other connections, would cost more memory than the rest of a run. Such a
// frame is read only for its header, the first oversizedHead bytes (size,
// API key and version, correlation ID of a request; size and correlation
// ID of a response), which keep its response matched, and the rest of it
// is passed over as it arrives: the direction stays in sync, and nothing
// of the frame is buffered. A ProduceRequest passed over is counted
// (Stats.OversizedProduce): a re-send inside it is not seen, which the
// summary says.

// oversizedHead is the part of an oversized frame that is read: the size
// field and the 8 bytes after it.
const oversizedHead = 12

// tooLarge reports whether a frame of size bytes (after its size field) is
// over Options.MaxHeldFrameBytes.
func (c *Conn) tooLarge(size int) bool { return size > int(c.d.opts.MaxHeldFrameBytes) }

// oversized takes the frame of dir whose first
// oversizedHead bytes head holds: counted, its request kept pending by
// correlation ID or the request it answers completed, and the rest of it
// left for pass.
func (c *Conn) oversized(dir *direction, head []byte) {
	d := c.d
	size := int64(binary.BigEndian.Uint32(head))
	dir.skip = 4 + size - int64(len(head))
	d.stats.OversizedFrames++
	d.stats.OversizedBytes += 4 + size
	d.stats.Frames++
	c.sum.Frames++
	switch {
	case c.saslRaw(dir):
		// A raw SASL token that large is junk: passed over.
	case dir.role == roleRequests:
		d.stats.Requests++
		key := int16(binary.BigEndian.Uint16(head[4:]))
		if key == keyProduce {
			d.stats.OversizedProduce++
		}
		c.push(pending{corr: int32(binary.BigEndian.Uint32(head[8:])), key: key,
			version: int16(binary.BigEndian.Uint16(head[6:]))})
	default:
		d.stats.Responses++
		i := c.findPending(int32(binary.BigEndian.Uint32(head[4:])))
		if i < 0 {
			d.stats.Unmatched++
			return
		}
		if p := c.answered(i); p.x != nil {
			// A ProduceResponse that large is not one: its request ends
			// with no answer read.
			p.x.NoResponse = NoResponseMalformed
			d.emit(p.x)
		}
	}
}

// pass passes over what b holds of the oversized frame dir is in, and
// returns the rest of b and its stream position.
func (c *Conn) pass(dir *direction, b []byte, pos int64) ([]byte, int64) {
	if dir.skip == 0 {
		return b, pos
	}
	n := min(dir.skip, int64(len(b)))
	dir.skip -= n
	return b[n:], pos + n
}
