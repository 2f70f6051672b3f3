package decode

import (
	"math/bits"
	"slices"
)

// Record prints are made on demand. Most batches are never sent again, and
// fingerprinting their records means decompressing them, which costs more
// than everything else decode does; so with Options.RecordPrints decode
// keeps the bytes of each batch of a producer that is not idempotent from
// its request to the moment its exchange is handed to the Sink, and the
// Sink calls Batch.RecordPrints for the batches it wants matched (detect
// asks for those of failed or unanswered attempts and for the batches that
// follow them on the same partition). The bytes live in pooled buffers by
// size class, so keeping them allocates nothing in the steady state; the
// bytes kept at once are bounded by maxRawHeld, beyond which a batch is
// fingerprinted at once instead (counted in Stats.PrintedEager).

const (
	// maxRawHeld bounds the batch bytes kept at once over all
	// connections: the produce requests in flight.
	maxRawHeld = 64 << 20
	// minRawClass and maxRawClass bound the pooled buffer sizes, 2^k
	// bytes; a batch larger than 2^maxRawClass is fingerprinted at once.
	minRawClass = 9
	maxRawClass = 22
	// maxRawFree bounds the free buffers kept per class.
	maxRawFree = 64
)

// rawPool holds free buffers by size class and counts the bytes held.
type rawPool struct {
	free [maxRawClass + 1][][]byte
	held int
}

// RecordPrints fingerprints the records of the batch, in order: for a
// producer that is not idempotent, with Options.RecordPrints, nil
// otherwise (or when none could be read; a batch cut by the decompression
// cap has the prints of the records before the cut). It may be called only
// during the Sink's Produce call that received the batch; the slice is the
// Decoder's, valid until the next call of RecordPrints.
func (b *Batch) RecordPrints() []RecordPrint {
	if b.printed || b.raw == nil {
		return b.prints
	}
	d := b.dec
	b.prints = d.printsOf(b, b.raw, d.prints[:0])
	d.prints = b.prints[:0]
	b.printed = true
	return b.prints
}

// keepRaw keeps raw, the bytes of batch, for RecordPrints.
func (d *Decoder) keepRaw(batch *Batch, raw []byte) {
	class := max(bits.Len(uint(len(raw)-1)), minRawClass)
	if class > maxRawClass || d.raw.held+len(raw) > maxRawHeld {
		batch.prints = d.printsOf(batch, raw, nil)
		batch.printed = true
		d.stats.PrintedEager++
		return
	}
	var buf []byte
	if n := len(d.raw.free[class]); n > 0 {
		buf = d.raw.free[class][n-1]
		d.raw.free[class] = d.raw.free[class][:n-1]
	} else {
		buf = make([]byte, 0, 1<<class)
	}
	batch.raw = append(buf[:0], raw...)
	batch.dec = d
	d.raw.held += len(raw)
}

// releaseRaw gives back the bytes kept for the batches of x, once the
// Sink is done with it.
func (d *Decoder) releaseRaw(x *Exchange) {
	for i := range x.Batches {
		b := &x.Batches[i]
		buf := b.raw
		if buf == nil || b.detached {
			continue
		}
		d.raw.held -= len(buf)
		class := bits.Len(uint(cap(buf) - 1))
		if class <= maxRawClass && cap(buf) == 1<<class && len(d.raw.free[class]) < maxRawFree {
			d.raw.free[class] = append(d.raw.free[class], buf[:0])
		}
		b.raw, b.dec = nil, nil
		if !b.kept {
			b.prints, b.printed = nil, false
		}
	}
}

// printsOf fingerprints the records of batch, whose bytes are raw, into
// dst.
func (d *Decoder) printsOf(batch *Batch, raw []byte, dst []RecordPrint) []RecordPrint {
	var err error
	truncated := false
	if batch.Magic == 2 {
		var section []byte
		var ok bool
		if section, truncated, ok = d.recordsSection(batch, raw); !ok {
			return dst
		}
		dst, err = appendPrints(dst, section)
	} else {
		w := legacyWalk{prints: true, pr: dst}
		err = d.walkLegacy(&w, raw[:batch.Length], true)
		dst = w.pr
	}
	if err != nil && !truncated {
		d.stats.RecordErrors++
	}
	d.stats.RecordPrints += int64(len(dst))
	return dst
}

// Detach lets the batch's kept bytes outlive the Sink's Produce call, for a
// Sink that hands exchanges to another goroutine (kdupcap's sharded
// analyze): the Decoder no longer takes them back, and RecordPrints,
// called later, fingerprints them with printer's decompressors; printer is
// a Decoder used only by the goroutine that calls RecordPrints.
func (b *Batch) Detach(printer *Decoder) {
	if b.raw == nil || b.detached {
		return
	}
	b.dec.raw.held -= len(b.raw)
	b.dec, b.detached = printer, true
}

// KeepPrints fingerprints the batch's records now and keeps the prints
// beyond the Sink's Produce call, for a Sink that hands exchanges to
// another goroutine and wants every batch matched (kdupcap's sharded
// analyze with --app-duplicates): the prints are made where the batch was
// decoded, and its bytes go back to the Decoder after the call as usual.
func (b *Batch) KeepPrints() {
	if b.raw == nil || b.kept {
		return
	}
	b.prints = slices.Clone(b.RecordPrints())
	b.printed, b.kept = true, true
}

// SetRecordPrints gives the batch its record prints, for a Sink fed by
// something other than a Decoder (a replay, a test): RecordPrints returns
// p from then on.
func (b *Batch) SetRecordPrints(p []RecordPrint) {
	b.prints, b.printed = p, true
}
