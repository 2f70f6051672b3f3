package decode

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce (API key 0), versions 0 through 13, decoded with kmsg:
//
//	v0-v2   legacy message sets (magic 0/1) in Records; response v1 adds
//	        throttle_time_ms, v2 log_append_time_ms
//	v3+     transactional_id; RecordBatch (magic 2)
//	v5+     response log_start_offset
//	v8+     response record_errors and error_message
//	v9+     flexible: compact strings and arrays, tagged fields, request
//	        header v2, response header v1
//	v13     topics named by TopicID instead of name, request and response
//
// acks=0 requests get no response: their exchange is complete at once.

// produceRequest decodes the body of a ProduceRequest and either emits its
// exchange (acks=0) or keeps it pending.
func (c *Conn) produceRequest(dir *direction, h requestHeader, clientID *string, body []byte, pos int64, ts time.Time) {
	d := c.d
	req := &d.preq
	req.Version = h.version
	defer d.release()
	err := plausibleProduceRequest(body, h.version)
	if err == nil {
		err = req.UnsafeReadFrom(body)
	}
	if err != nil {
		d.errorf(c, dir.fromA, pos, "produce v%d request correlation %d: %v", h.version, h.corr, err)
		// Still pending, so that its response (if any) stays matched.
		c.push(pending{corr: h.corr, key: h.key, version: h.version, flexible: h.flexible})
		return
	}
	d.stats.ProduceRequests++
	c.sum.ProduceRequests++
	x := &Exchange{
		Conn:          c.info,
		ClientID:      clientID,
		CorrelationID: h.corr,
		Version:       h.version,
		Acks:          req.Acks,
		TimeoutMillis: req.TimeoutMillis,
		RequestTime:   ts,
	}
	if req.TransactionID != nil {
		id := strings.Clone(*req.TransactionID)
		x.TransactionalID = &id
	}
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	// Room for a batch per partition, but no more than the body can
	// hold (a legacy message of 26 bytes is the smallest): partitions of
	// null records hold none.
	x.Batches = make([]Batch, 0, min(n, len(body)/minBatchBytes+1))
	for i := range req.Topics {
		t := &req.Topics[i]
		topic := ""
		if h.version < 13 {
			topic = d.intern(t.Topic)
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			first := len(x.Batches)
			var err error
			x.Batches, err = d.appendBatches(x.Batches, p.Records, topic, t.TopicID, p.Partition)
			if err != nil {
				d.errorf(c, dir.fromA, pos, "produce correlation %d partition %d: %v", h.corr, p.Partition, err)
			}
			for _, b := range x.Batches[first:] {
				d.stats.Batches++
				if b.Corrupt {
					d.stats.CorruptBatches++
				}
				if b.NumRecords > 0 {
					d.stats.Records += int64(b.NumRecords)
				}
			}
		}
	}
	if req.Acks == 0 {
		x.NoResponse = NoResponseAcks0
		d.emit(x)
		d.keepFrame() // done while its frame is decoded: the array stays
		return
	}
	d.takeFrame(x)
	x.InFlight = c.inFlight() + 1
	c.push(pending{corr: h.corr, key: h.key, version: h.version, flexible: h.flexible, x: x})
}

// produceResponse decodes the body of the ProduceResponse answering p (after
// the response header), attaches each partition's answer to the batches of
// that partition, and emits the exchange.
func (c *Conn) produceResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	d, x := c.d, p.x
	resp := &d.presp
	resp.Version = p.version
	defer d.release()
	err := plausibleProduceResponse(body, p.version)
	if err == nil {
		err = resp.UnsafeReadFrom(body)
	}
	if err != nil {
		d.errorf(c, dir.fromA, pos, "produce v%d response correlation %d: %v", p.version, p.corr, err)
		x.NoResponse = NoResponseMalformed
		d.emit(x)
		return
	}
	d.stats.ProduceResponses++
	x.Responded = true
	x.ResponseTime = ts
	x.ThrottleMillis = resp.ThrottleMillis
	n := 0
	for i := range resp.Topics {
		n += len(resp.Topics[i].Partitions)
	}
	answers := make([]PartitionResponse, 0, n)
	next := 0 // responses usually list partitions in request order
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			answers = append(answers, PartitionResponse{
				ErrorCode:      rp.ErrorCode,
				BaseOffset:     rp.BaseOffset,
				LogAppendTime:  rp.LogAppendTime,
				LogStartOffset: rp.LogStartOffset,
				RecordErrors:   len(rp.ErrorRecords),
			})
			a := &answers[len(answers)-1]
			if rp.ErrorMessage != nil {
				msg := strings.Clone(*rp.ErrorMessage)
				a.ErrorMessage = &msg
			}
			next = attach(x.Batches, next, p.version, t.Topic, t.TopicID, rp.Partition, a)
		}
	}
	d.emit(x)
}

// attach sets a as the response of every batch of the partition, searching
// from index next, and returns the index after the last batch set.
func attach(batches []Batch, next int, version int16, topic string, id [16]byte, partition int32, a *PartitionResponse) int {
	n := len(batches)
	start, found := next, false
	for k := 0; k < n; k++ {
		i := (start + k) % n
		b := &batches[i]
		same := b.Partition == partition
		if version >= 13 {
			same = same && b.TopicID == id
		} else {
			same = same && b.Topic == topic
		}
		if same {
			b.Response, found = a, true
			next = i + 1
		} else if found {
			break
		}
	}
	return next
}

// release drops the room kmsg kept for the topics of a large message the
// Decoder reuses (produce request and response, fetch request, metadata
// response), so that one frame does not hold memory for the rest of the run.
func (d *Decoder) release() {
	const keep = 1024
	if cap(d.preq.Topics) > keep {
		d.preq = kmsg.ProduceRequest{}
	}
	if cap(d.presp.Topics) > keep {
		d.presp = kmsg.ProduceResponse{}
	}
	if cap(d.freq.Topics) > keep {
		d.freq = kmsg.FetchRequest{}
	}
	if cap(d.mresp.Topics) > keep {
		d.mresp = kmsg.MetadataResponse{}
	}
}
