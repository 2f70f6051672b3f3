package decode

// Lending a request frame's array to its exchange. A produce request that
// spans segments is copied once, into its direction's buffer, cut from an
// array (buffer.go); with Options.RecordPrints its batches' bytes must then
// outlive the frame until the exchange is handed to the Sink, when the
// answer comes. Rather than copy them a second time into pooled buffers
// (keepRaw), the exchange takes the whole array: its batches' kept bytes
// point into it, the direction cuts its next frame from another array (a
// spare, buffer.go), and the array becomes a spare once the exchange was
// handed to the Sink (releaseRaw). The bytes kept are bounded as before,
// by Options.MaxPrintBytes, the lent array's capacity counted in full;
// beyond it, or for an array over a quarter larger than its frame, the
// batches are copied or fingerprinted at once as keepRaw does. Small
// frames are not lent: copying them costs less than the array their
// direction would have to make for the next frame.

// minLendBytes is the smallest frame whose array is lent.
const minLendBytes = 64 << 10

// frameLend is the array of the buffered request frame being decoded,
// which its exchange may take.
type frameLend struct {
	// arr is the array of the frame's direction, nil when the frame is not
	// buffered or too small to lend.
	arr []byte
	// taken: batches' kept bytes point into arr, counted in rawPool.held
	// until their exchange is done; the exchange takes arr, and the
	// direction gives it up.
	taken bool
}

// offer lets the exchange of frame, buffered in dir, take dir's array
// while the frame is decoded; call settle after.
func (d *Decoder) offer(dir *direction, frame []byte) {
	if !d.opts.RecordPrints || dir.role == roleResponses || len(frame) < minLendBytes || cap(dir.arr) > len(frame)+len(frame)/4 {
		return
	}
	d.lend = frameLend{arr: dir.arr}
}

// settle ends what offer began: it reports whether the frame's exchange
// took the array, which its direction must then give up.
func (d *Decoder) settle() bool {
	taken := d.lend.taken
	d.lend = frameLend{}
	return taken
}

// lendRaw keeps raw, the bytes of batch, in place, in the array on offer:
// false when none is, or the bound on kept bytes refuses it.
func (d *Decoder) lendRaw(batch *Batch, raw []byte) bool {
	l := &d.lend
	if l.arr == nil {
		return false
	}
	if !l.taken {
		if d.raw.held+cap(l.arr) > d.opts.MaxPrintBytes {
			return false
		}
		l.taken = true
		d.raw.held += cap(l.arr)
	}
	batch.raw, batch.printer, batch.lent = raw, &d.pr, true
	return true
}

// takeFrame gives x, pending, the array on offer if its batches' bytes
// point into it.
func (d *Decoder) takeFrame(x *Exchange) {
	if d.lend.taken {
		x.frame = d.lend.arr
	}
}

// keepFrame leaves the array on offer with its direction: its exchange
// was handed to the Sink while the frame was decoded (acks=0), and no
// batch's bytes point into it any more.
func (d *Decoder) keepFrame() {
	if d.lend.taken {
		d.raw.held -= cap(d.lend.arr)
		d.lend.taken = false
	}
}

// returnFrame gives back the array x took, once the Sink is done with x,
// as a spare for the next large frames: no batch's bytes point into it any
// more (Batch.Detach copies those that outlive the call).
func (d *Decoder) returnFrame(x *Exchange) {
	if arr := x.frame; arr != nil {
		x.frame = nil
		d.raw.held -= cap(arr)
		d.putSpare(arr, minLendBytes)
	}
}
