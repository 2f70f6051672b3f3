package decode

import (
	"errors"
	"math/bits"
	"slices"
)

// Record prints are made on demand. Most batches are never sent again, and
// fingerprinting their records means decompressing them, which costs more
// than everything else decode does; so with Options.RecordPrints decode
// keeps the bytes of each batch from its request to the moment its exchange is handed to the Sink, and the
// Sink calls Batch.RecordPrints for the batches it wants matched (detect
// asks for those of failed or unanswered attempts and for the batches that
// follow them on the same partition). The bytes live in the array of
// their request's frame, lent to the exchange (lend.go), or in pooled
// buffers by size class, so keeping them allocates nothing in the steady
// state; the bytes kept at once are bounded by Options.MaxPrintBytes,
// beyond which a batch is fingerprinted at once instead (counted in
// Stats.PrintedEager).

// MaxBatchPrints bounds the records of one batch fingerprinted: a batch of
// more (real batches of 1 MB hold some thousands; 16 MiB of 4-byte
// records would be 4 million prints, 64 MB kept until the exchange ends)
// is matched by its first MaxBatchPrints, the rest counted in
// Stats.PrintsCut.
const MaxBatchPrints = 1 << 16

// errPrintsCut ends a batch's prints at MaxBatchPrints.
var errPrintsCut = errors.New("record prints cut at the bound per batch")

const (
	// DefaultMaxPrintBytes is Options.MaxPrintBytes when zero.
	DefaultMaxPrintBytes = 32 << 20
	// minRawClass and maxRawClass bound the pooled buffer sizes, 2^k
	// bytes; a batch larger than 2^maxRawClass is fingerprinted at once.
	minRawClass = 6
	maxRawClass = 22
	// maxRawFree bounds the free buffers kept per class.
	maxRawFree = 64
)

// printBytes is the memory of one RecordPrint, for the bound on prints
// made at once (Options.MaxPrintBytes).
const printBytes = 16

// rawPool holds free buffers by size class and counts the bytes held, and
// the prints made at once that pending exchanges hold.
type rawPool struct {
	free  [maxRawClass + 1][][]byte
	held  int
	eager int
}

// Why a Sink calls back into decode. RecordPrints is the one method by
// which a Sink (detect) reaches back into decode, and it must be a call
// rather than a field decode fills: only the Sink knows which batches it
// will match by record (those of failed or unanswered attempts and the
// ones after them on the partition, decided by state it alone holds), and
// fingerprinting every batch would decompress every batch, the costliest
// thing decode can do, for the few a retry touches. So decode keeps the
// bytes until the Sink's call returns, and a batch carries the Printer
// that will fingerprint them if asked: its Decoder's, or, once Detached,
// the Printer of the goroutine that asks.

// Printer fingerprints the records of batches whose bytes decode kept: it
// holds the decompressors and the scratch space for that. Every Decoder
// has one; a Sink that hands batches to another goroutine (pipeline's
// sharded run) gives them that goroutine's Printer (Batch.Detach). A
// Printer is not safe for concurrent use.
type Printer struct {
	codecs codecs
	// limit is Options.MaxDecompressedBytes; budget is what is left of
	// Options.MaxDecompressedTotal.
	limit  int
	budget int64
	// stats counts prints, errors and truncations: the Decoder's Stats, or
	// own for a Printer of its own.
	stats *Stats
	own   Stats
	// pool is the Decoder's buffers of kept bytes (nil for a Printer of
	// its own), for Detach to take a batch's bytes out of its count.
	pool *rawPool
	// scratch is what RecordPrints returns, reused.
	scratch []RecordPrint
}

// NewPrinter returns a Printer of its own, decompressing at most
// opts.MaxDecompressedBytes per batch (0: DefaultMaxDecompressedBytes) and
// opts.MaxDecompressedTotal in all (0: DefaultMaxDecompressedTotal), a
// budget of its own; the other options are not used.
func NewPrinter(opts Options) *Printer {
	p := &Printer{limit: opts.MaxDecompressedBytes, budget: opts.MaxDecompressedTotal}
	if p.limit <= 0 {
		p.limit = DefaultMaxDecompressedBytes
	}
	if p.budget <= 0 {
		p.budget = DefaultMaxDecompressedTotal
	}
	p.stats = &p.own
	return p
}

// RecordPrints fingerprints the records of the batch, in order: with
// Options.RecordPrints, nil otherwise (or when none could be read; a batch cut by the decompression
// cap has the prints of the records before the cut). It may be called only
// during the Sink's Produce call that received the batch (or, once
// Detached, on the goroutine of its Printer); the slice is the Printer's,
// valid until its next RecordPrints.
func (b *Batch) RecordPrints() []RecordPrint {
	if b.printed || b.raw == nil {
		return b.prints
	}
	p := b.printer
	b.prints = p.printsOf(b, b.raw, p.scratch[:0])
	p.scratch = b.prints[:0]
	b.printed = true
	return b.prints
}

// keepRaw keeps raw, the bytes of batch, for RecordPrints.
func (d *Decoder) keepRaw(batch *Batch, raw []byte) {
	if d.lendRaw(batch, raw) {
		return
	}
	class := max(bits.Len(uint(len(raw)-1)), minRawClass)
	if class > maxRawClass || d.raw.held+len(raw) > d.opts.MaxPrintBytes {
		batch.printed = true
		limit := d.opts.MaxPrintBytes / printBytes
		if d.raw.eager >= limit {
			d.stats.PrintsSkipped++
			return
		}
		prints := d.pr.printsOf(batch, raw, nil)
		if d.raw.eager+len(prints) > limit {
			d.stats.PrintsSkipped++
			return
		}
		batch.prints, batch.eager = prints, true
		d.raw.eager += len(prints)
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
	batch.printer = &d.pr
	d.raw.held += len(raw)
}

// releaseRaw gives back the bytes kept for the batches of x, once the
// Sink is done with it.
func (d *Decoder) releaseRaw(x *Exchange) {
	for i := range x.Batches {
		b := &x.Batches[i]
		if b.eager {
			d.raw.eager -= len(b.prints)
			b.eager = false
		}
		buf := b.raw
		if buf == nil || b.detached {
			continue // detached bytes are their goroutine's (Detach)
		}
		if !b.lent {
			d.raw.held -= len(buf)
			class := bits.Len(uint(cap(buf) - 1))
			if class <= maxRawClass && cap(buf) == 1<<class && len(d.raw.free[class]) < maxRawFree {
				d.raw.free[class] = append(d.raw.free[class], buf[:0])
			}
		}
		b.raw, b.printer, b.lent = nil, nil, false
		if !b.kept {
			b.prints, b.printed = nil, false
		}
	}
	d.returnFrame(x)
}

// printsOf fingerprints the records of batch, whose bytes are raw, into
// dst.
func (p *Printer) printsOf(batch *Batch, raw []byte, dst []RecordPrint) []RecordPrint {
	var err error
	truncated := false
	if batch.Magic == 2 {
		var section []byte
		var ok bool
		if section, truncated, ok = p.recordsSection(batch, raw); !ok {
			return dst
		}
		dst, err = appendPrints(dst, section)
	} else {
		w := legacyWalk{prints: true, pr: dst}
		err = p.walkLegacy(&w, raw[:batch.Length], true)
		dst = w.pr
	}
	switch {
	case err == errPrintsCut || batch.Magic < 2 && len(dst) >= MaxBatchPrints:
		p.stats.PrintsCut++
	case err != nil && !truncated && err != errBudget:
		p.stats.RecordErrors++
	}
	p.stats.RecordPrints += int64(len(dst))
	return dst
}

// Detach lets the batch's kept bytes outlive the Sink's Produce call, for a
// Sink that hands exchanges to another goroutine (pipeline's sharded run):
// the Decoder no longer takes them back, and RecordPrints, called later,
// fingerprints them with p, the Printer of the goroutine that calls it.
func (b *Batch) Detach(p *Printer) {
	if b.raw == nil || b.detached {
		return
	}
	switch {
	case b.lent:
		// The frame's array goes back to its Decoder once the exchange is
		// done (lend.go): the bytes that outlive it are copied.
		b.raw, b.lent = slices.Clone(b.raw), false
	case b.printer.pool != nil:
		b.printer.pool.held -= len(b.raw)
	}
	b.printer, b.detached = p, true
}

// KeepPrints fingerprints the batch's records now and keeps the prints
// beyond the Sink's Produce call, for a Sink that hands exchanges to
// another goroutine and wants every batch matched (kdupcap's sharded
// run with --app-duplicates): the prints are made where the batch was
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
