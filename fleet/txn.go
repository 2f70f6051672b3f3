package fleet

import (
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// The transaction records (schema.go): what detect reads of a
// transactional producer besides its produce attempts, so that a
// correlation knows, as analyze does, whether the transaction of a re-sent
// batch was committed or aborted (an aborted copy is invisible to
// read_committed consumers). The producer sends EndTxn and InitProducerId
// to its transaction coordinator, often on another broker host than the
// partitions' leaders: the records are keyed by the client (Key), as its
// attempts are, so that they reach the same partition.

// EndTxn flags.
const (
	txnResponded = 1 << iota
	txnClientID
	txnCommit
)

// InitProducerId flags.
const (
	initClientID = 1 << iota
	initTxnID
)

// AppendEndTxn appends the record of EndTxn x to dst.
func AppendEndTxn(dst []byte, h Header, x *decode.EndTxn) []byte {
	w := writer{buf: dst}
	header(&w, KindEndTxn, h, x.Conn)
	flags := uint64(0)
	if x.Responded {
		flags |= txnResponded
	}
	if x.ClientID != nil {
		flags |= txnClientID
	}
	if x.Commit {
		flags |= txnCommit
	}
	w.uvarint(flags)
	if x.ClientID != nil {
		w.str(*x.ClientID)
	}
	w.str(x.TransactionalID)
	w.i32(x.CorrelationID)
	w.i16(x.Version)
	w.varint(x.ProducerID)
	w.i16(x.ProducerEpoch)
	req := x.RequestTime.UnixNano()
	w.varint(h.At.UnixNano() - req)
	if x.Responded {
		w.varint(x.ResponseTime.UnixNano() - req)
		w.i16(x.ErrorCode)
		w.i16(x.BumpedEpoch)
	}
	return w.buf
}

func readEndTxn(r *reader, at int64) *decode.EndTxn {
	x := &decode.EndTxn{BumpedEpoch: -1}
	flags := r.uvarint()
	if flags&txnClientID != 0 {
		s := r.str()
		x.ClientID = &s
	}
	x.Commit = flags&txnCommit != 0
	x.TransactionalID = r.str()
	x.CorrelationID = r.i32()
	x.Version = r.i16()
	x.ProducerID = r.varint()
	x.ProducerEpoch = r.i16()
	req := at - r.varint()
	x.RequestTime = time.Unix(0, req)
	if flags&txnResponded != 0 {
		x.Responded = true
		x.ResponseTime = time.Unix(0, req+r.varint())
		x.ErrorCode = r.i16()
		x.BumpedEpoch = r.i16()
	}
	return x
}

// AppendInitProducerID appends the record of InitProducerId x to dst.
func AppendInitProducerID(dst []byte, h Header, x *decode.InitProducerID) []byte {
	w := writer{buf: dst}
	header(&w, KindInitProducerID, h, x.Conn)
	flags := uint64(0)
	if x.ClientID != nil {
		flags |= initClientID
	}
	if x.TransactionalID != nil {
		flags |= initTxnID
	}
	w.uvarint(flags)
	if x.ClientID != nil {
		w.str(*x.ClientID)
	}
	if x.TransactionalID != nil {
		w.str(*x.TransactionalID)
	}
	w.i32(x.CorrelationID)
	w.i16(x.Version)
	req := x.RequestTime.UnixNano()
	w.varint(h.At.UnixNano() - req)
	w.varint(x.ResponseTime.UnixNano() - req)
	w.varint(x.OldProducerID)
	w.i16(x.OldProducerEpoch)
	w.i16(x.ErrorCode)
	w.varint(x.ProducerID)
	w.i16(x.ProducerEpoch)
	return w.buf
}

func readInitProducerID(r *reader, at int64) *decode.InitProducerID {
	x := &decode.InitProducerID{}
	flags := r.uvarint()
	if flags&initClientID != 0 {
		s := r.str()
		x.ClientID = &s
	}
	if flags&initTxnID != 0 {
		s := r.str()
		x.TransactionalID = &s
	}
	x.CorrelationID = r.i32()
	x.Version = r.i16()
	req := at - r.varint()
	x.RequestTime = time.Unix(0, req)
	x.ResponseTime = time.Unix(0, req+r.varint())
	x.OldProducerID = r.varint()
	x.OldProducerEpoch = r.i16()
	x.ErrorCode = r.i16()
	x.ProducerID = r.varint()
	x.ProducerEpoch = r.i16()
	return x
}

// EndTxn emits the record of x, keyed as the attempts of its client are.
func (e *Encoder) EndTxn(x *decode.EndTxn, emit Emit) {
	if x == nil || x.Conn == nil || x.ProducerID < 0 {
		return // detect reads none of these
	}
	t := x.RequestTime
	if x.Responded && x.ResponseTime.After(t) {
		t = x.ResponseTime
	}
	e.buf = AppendEndTxn(e.buf[:0], e.header(t), x)
	e.key = appendKey(e.key[:0], x.Conn.Client, x.ClientID)
	emit(e.key, e.buf)
}

// InitProducerID emits the record of x, keyed as the attempts of its
// client are: only a transactional.id's that succeeded (detect reads no
// other).
func (e *Encoder) InitProducerID(x *decode.InitProducerID, emit Emit) {
	if x == nil || x.Conn == nil || x.TransactionalID == nil || x.ErrorCode != 0 || x.ProducerID < 0 {
		return
	}
	e.buf = AppendInitProducerID(e.buf[:0], e.header(x.ResponseTime), x)
	e.key = appendKey(e.key[:0], x.Conn.Client, x.ClientID)
	emit(e.key, e.buf)
}

// internTxn gives the strings of a transaction record the Decoder's
// interned copies.
func (d *Decoder) internTxn(ev *Event) {
	intern := func(p **string) {
		if *p != nil {
			s := d.intern(**p)
			*p = &s
		}
	}
	if x := ev.EndTxn; x != nil {
		intern(&x.ClientID)
		x.TransactionalID = d.intern(x.TransactionalID)
	}
	if x := ev.InitProducerID; x != nil {
		intern(&x.ClientID)
		intern(&x.TransactionalID)
	}
}
