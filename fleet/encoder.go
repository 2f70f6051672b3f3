package fleet

import (
	"net/netip"
	"slices"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/internal/fifo"
)

// DetailEvery is how often (capture time) an attempt repeats its
// connection's details (software, SASL), for a consumer that starts
// reading after the connection's first attempt.
const DetailEvery = time.Minute

// maxEncoderConns bounds the connections an Encoder remembers (their key,
// when their details went out, an end waiting for their first attempt);
// beyond it the oldest is forgotten: its next attempt repeats its details.
const maxEncoderConns = 1 << 16

// EncoderOptions configure an Encoder.
type EncoderOptions struct {
	// Host names the capture host; Run numbers this run of it (a random
	// number: a restarted host numbers its connections anew).
	Host string
	Run  uint64
	// Prints says which batches carry their record prints and records.
	Prints PrintMode
}

// Encoder turns a capture's exchanges and connection ends into attempt
// records, in the order it is handed them: the record's key (Key) and
// value. It runs in a decode.Sink's calls, on the capture's goroutine;
// it is not safe for concurrent use.
type Encoder struct {
	opts  EncoderOptions
	seq   uint64
	at    int64 // newest capture time handed over, Unix ns
	hot   hotTracker
	conns map[*decode.ConnInfo]*encConn
	order fifo.Queue[*decode.ConnInfo]
	buf   []byte
	key   []byte
	full  []bool
}

// encConn is what an Encoder remembers of a connection.
type encConn struct {
	key      []byte // its records' key, once an attempt named its client.id
	keyID    string // the client.id in key
	detailAt int64  // when its details last went out, Unix ns; 0: never
	end      *decode.ConnEnd
	ended    bool
}

// NewEncoder returns an Encoder with o.
func NewEncoder(o EncoderOptions) *Encoder {
	return &Encoder{opts: o, conns: make(map[*decode.ConnInfo]*encConn)}
}

// Key is the record key of a producer: its IP (without the port, IPv4
// unmapped) and client.id, "IP|CLIENT.ID" ("IP|" for a null client.id),
// so that all of one producer's attempts, on any connection to any
// broker seen by any host, land in one partition.
func Key(client netip.AddrPort, clientID *string) []byte {
	return appendKey(nil, client, clientID)
}

func appendKey(dst []byte, client netip.AddrPort, clientID *string) []byte {
	dst = client.Addr().Unmap().AppendTo(dst)
	dst = append(dst, '|')
	if clientID != nil {
		dst = append(dst, *clientID...)
	}
	return dst
}

// idOf is the client.id a key holds: "" for a null one, as in Key.
func idOf(clientID *string) string {
	if clientID == nil {
		return ""
	}
	return *clientID
}

// Emit receives one record: key and value are the Encoder's, valid
// during the call.
type Emit func(key, value []byte)

func (e *Encoder) header(t time.Time) Header {
	e.at = max(e.at, t.UnixNano())
	e.seq++
	return Header{Host: e.opts.Host, Run: e.opts.Run, Seq: e.seq, At: time.Unix(0, e.at)}
}

func (e *Encoder) conn(c *decode.ConnInfo) *encConn {
	ec, ok := e.conns[c]
	if ok {
		return ec
	}
	for len(e.conns) >= maxEncoderConns {
		old, _ := e.order.Front()
		e.order.Pop()
		delete(e.conns, old)
	}
	ec = &encConn{}
	e.conns[c] = ec
	e.order.Push(c)
	return ec
}

// Exchange emits the record of x (none for an exchange of no batch), and
// then the end of its connection if it came before the connection's first
// attempt. It decides which batches carry their prints, and fingerprints
// them (Batch.RecordPrints) while x is the Sink's: each batch's prints are
// given back to it (Batch.SetRecordPrints) as a copy, so that the Sink
// after it (detect) reads the same prints.
func (e *Encoder) Exchange(x *decode.Exchange, emit Emit) {
	if x == nil || x.Conn == nil || len(x.Batches) == 0 {
		return
	}
	ec := e.conn(x.Conn)
	if ec.key == nil {
		ec.key, ec.keyID = appendKey(nil, x.Conn.Client, x.ClientID), idOf(x.ClientID)
	}
	t := x.RequestTime
	if x.Responded && x.ResponseTime.After(t) {
		t = x.ResponseTime
	}
	h := e.header(t)
	details := ec.detailAt == 0 || e.at-ec.detailAt >= int64(DetailEvery)
	if details {
		ec.detailAt = e.at
	}
	e.full = e.full[:0]
	for i := range x.Batches {
		b := &x.Batches[i]
		full := false
		switch e.opts.Prints {
		case PrintsAll:
			full = true
		case PrintsNear:
			full = e.hot.want(x, b)
		}
		if full {
			// A copy, kept by the batch: the Printer's slice is reused
			// by the next batch's prints.
			b.SetRecordPrints(slices.Clone(b.RecordPrints()))
		}
		e.full = append(e.full, full)
	}
	e.buf = AppendAttempt(e.buf[:0], h, x, details, func(i int) bool { return e.full[i] })
	key := ec.key
	if ec.keyID != idOf(x.ClientID) {
		// client.id is per request: an attempt whose client.id is not
		// the one of the connection's key is keyed by its own, so that
		// it lands with its producer's other attempts.
		e.key = appendKey(e.key[:0], x.Conn.Client, x.ClientID)
		key = e.key
	}
	emit(key, e.buf)
	if ec.end != nil {
		end := *ec.end
		ec.end = nil
		e.emitEnd(x.Conn, ec, end, emit)
	}
}

// ConnEnd emits the record of c's end, under the key of its attempts; a
// connection with no attempt yet keeps its end until its first attempt
// (its answer-less requests complete after its end), and one that never
// has one emits nothing.
func (e *Encoder) ConnEnd(c *decode.ConnInfo, end decode.ConnEnd, emit Emit) {
	if c == nil {
		return
	}
	ec := e.conn(c)
	if ec.ended || ec.end != nil {
		return
	}
	if ec.key == nil {
		ec.end = &end
		return
	}
	e.emitEnd(c, ec, end, emit)
}

func (e *Encoder) emitEnd(c *decode.ConnInfo, ec *encConn, end decode.ConnEnd, emit Emit) {
	ec.ended = true
	h := e.header(end.Time)
	e.buf = AppendConnEnd(e.buf[:0], h, c, end)
	emit(ec.key, e.buf)
}
