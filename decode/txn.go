package decode

import (
	"strings"
	"time"
)

// Transactions: InitProducerId (API key 22, v0-v5) gives a producer its ID
// and epoch, and names its transactional.id; EndTxn (API key 26, v0-v5)
// commits or aborts the transaction of a producer ID and epoch. Both are
// read with kmsg; requests v2+ (InitProducerId) and v3+ (EndTxn) are
// flexible. InitProducerId v3+ requests carry the ID and epoch being
// bumped; EndTxn v5 responses (KIP-890) carry the bumped epoch. They are
// parsed only when the Sink implements TxnSink.

const (
	keyInitProducerID = 22
	keyEndTxn         = 26
)

// InitProducerID is one InitProducerId request and its response.
type InitProducerID struct {
	Conn            *ConnInfo
	ClientID        *string
	CorrelationID   int32
	Version         int16
	RequestTime     time.Time
	ResponseTime    time.Time
	TransactionalID *string // nil: an idempotent producer without transactions
	// OldProducerID and OldProducerEpoch are the ID and epoch the client
	// asked to bump (v3+), -1 otherwise.
	OldProducerID    int64
	OldProducerEpoch int16
	ErrorCode        int16
	ProducerID       int64
	ProducerEpoch    int16
}

// EndTxn is one EndTxn request and, when Responded, its response.
type EndTxn struct {
	Conn            *ConnInfo
	ClientID        *string
	CorrelationID   int32
	Version         int16
	RequestTime     time.Time
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool // false: abort
	// Responded is false when the capture holds no answer (the connection
	// closed, or a later response came first).
	Responded    bool
	ResponseTime time.Time
	ErrorCode    int16
	// BumpedEpoch is the producer's next epoch, which EndTxn v5+ responses
	// give (KIP-890 bumps the epoch at every transaction end); -1 before.
	BumpedEpoch int16
}

// TxnSink is implemented by a Sink that also wants the transaction requests
// and their answers.
type TxnSink interface {
	InitProducerID(x *InitProducerID)
	EndTxn(x *EndTxn)
}

// txnRequest reads an InitProducerId or EndTxn request and keeps it pending.
func (c *Conn) txnRequest(dir *direction, h requestHeader, clientID *string, body []byte, pos int64, ts time.Time) {
	d := c.d
	p := pending{corr: h.corr, key: h.key, version: h.version, flexible: h.flexible}
	aux := &auxRequest{time: ts, clientID: clientID, producerID: -1, epoch: -1}
	var err error
	if h.key == keyInitProducerID {
		req := &d.ipreq
		req.Default()
		req.Version = h.version
		if err = req.UnsafeReadFrom(body); err == nil {
			if req.TransactionalID != nil {
				s := strings.Clone(*req.TransactionalID)
				aux.txnID = &s
			}
			aux.producerID, aux.epoch = req.ProducerID, req.ProducerEpoch
		}
	} else {
		req := &d.etreq
		req.Default()
		req.Version = h.version
		if err = req.UnsafeReadFrom(body); err == nil {
			s := strings.Clone(req.TransactionalID)
			aux.txnID = &s
			aux.producerID, aux.epoch, aux.commit = req.ProducerID, req.ProducerEpoch, req.Commit
		}
	}
	if err != nil {
		d.errorf(c, dir.fromA, pos, "api %d v%d request correlation %d: %v", h.key, h.version, h.corr, err)
	} else {
		p.aux = aux
	}
	c.push(p)
}

// txnResponse reads the response answering p and hands it to the TxnSink.
func (c *Conn) txnResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	d := c.d
	if p.key == keyInitProducerID {
		resp := &d.ipresp
		resp.Default()
		resp.Version = p.version
		if err := resp.UnsafeReadFrom(body); err != nil {
			d.errorf(c, dir.fromA, pos, "init producer id v%d response correlation %d: %v", p.version, p.corr, err)
			return
		}
		d.tsink.InitProducerID(&InitProducerID{
			Conn: c.info, ClientID: p.aux.clientID, CorrelationID: p.corr, Version: p.version,
			RequestTime: p.aux.time, ResponseTime: ts, TransactionalID: p.aux.txnID,
			OldProducerID: p.aux.producerID, OldProducerEpoch: p.aux.epoch,
			ErrorCode: resp.ErrorCode, ProducerID: resp.ProducerID, ProducerEpoch: resp.ProducerEpoch,
		})
		return
	}
	resp := &d.etresp
	resp.Default()
	resp.Version = p.version
	x := c.endTxn(p)
	if err := resp.UnsafeReadFrom(body); err != nil {
		d.errorf(c, dir.fromA, pos, "end txn v%d response correlation %d: %v", p.version, p.corr, err)
	} else {
		x.Responded, x.ResponseTime, x.ErrorCode = true, ts, resp.ErrorCode
		if p.version >= 5 && resp.ErrorCode == 0 {
			x.BumpedEpoch = resp.ProducerEpoch
		}
	}
	d.tsink.EndTxn(x)
}

// endTxn builds the EndTxn of pending p, as yet unanswered.
func (c *Conn) endTxn(p pending) *EndTxn {
	return &EndTxn{
		Conn: c.info, ClientID: p.aux.clientID, CorrelationID: p.corr, Version: p.version,
		RequestTime: p.aux.time, TransactionalID: *p.aux.txnID,
		ProducerID: p.aux.producerID, ProducerEpoch: p.aux.epoch, Commit: p.aux.commit,
		BumpedEpoch: -1,
	}
}

// unanswered hands over a pending EndTxn that will get no answer, so that
// the transaction's outcome is known to be unknown rather than taken from a
// later EndTxn.
func (c *Conn) unanswered(p pending) {
	if p.key == keyEndTxn && p.aux != nil && c.d.tsink != nil {
		c.d.tsink.EndTxn(c.endTxn(p))
	}
}

// auxRequest decodes a request of Fetch, InitProducerId or EndTxn when the
// Sink wants it, reporting whether it did (and kept it pending).
func (c *Conn) auxRequest(dir *direction, h requestHeader, clientID *string, body []byte, pos int64, ts time.Time) bool {
	switch {
	case h.key == keyFetch && c.d.fsink != nil:
		c.fetchRequest(dir, h, clientID, body, pos, ts)
	case (h.key == keyInitProducerID || h.key == keyEndTxn) && c.d.tsink != nil:
		c.txnRequest(dir, h, clientID, body, pos, ts)
	default:
		return false
	}
	c.d.stats.Skipped++ // not a Produce frame: counted as the others are
	return true
}

// auxResponse decodes the response answering p, a request auxRequest kept.
func (c *Conn) auxResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	if p.key == keyFetch {
		c.fetchResponse(dir, p, body, pos, ts)
		return
	}
	c.txnResponse(dir, p, body, pos, ts)
}
