package decode

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Fetch (API key 1), versions 0 through 18. The request is read with kmsg
// for who fetched (ReplicaID: v0-v14 in the body, v15+ in the ReplicaState
// tagged field) and the isolation level (v4+). The response is walked by
// hand, without kmsg, so that a response of many partitions costs memory
// only for the batches it holds:
//
//	v1+     throttle_time_ms
//	v4+     last_stable_offset, aborted_transactions
//	v5+     log_start_offset
//	v7+     top-level error_code and session_id (fetch sessions)
//	v11+    preferred_read_replica
//	v12+    flexible: compact arrays, strings and bytes, tagged fields
//	v13+    topics named by TopicID instead of name
//
// A broker fills a partition's records up to the fetch's byte limits, so the
// last batch of a partition is often cut short: it is skipped, not counted
// as malformed. Fetches are parsed only when the Sink implements FetchSink.

const keyFetch = 1

// Fetch is one FetchResponse with the request it answers: the record batches
// a consumer (ReplicaID -1) or a follower broker (ReplicaID >= 0) read from
// the log, each at the offset the log holds it.
type Fetch struct {
	Conn           *ConnInfo
	ClientID       *string
	CorrelationID  int32
	Version        int16
	ReplicaID      int32 // -1: a consumer; else the follower's broker ID
	IsolationLevel int8  // 0 read_uncommitted, 1 read_committed
	RequestTime    time.Time
	ResponseTime   time.Time
	Partitions     []FetchedPartition
}

// FetchedPartition is one partition of a FetchResponse.
type FetchedPartition struct {
	Topic            string   // empty for v13+ unless a Metadata response named TopicID
	TopicID          [16]byte // zero before v13
	Partition        int32
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64 // -1 before v4
	LogStartOffset   int64 // -1 before v5
	// Batches are the whole record batches, in log order; a last batch cut
	// short by the fetch's byte limit is left out.
	Batches []FetchedBatch
}

// FetchedBatch is one record batch as the log holds it: BaseOffset is the
// offset of its first record. Batch holds the same header fields, CRC and
// Hash a produced batch has (the fingerprint reads the header and both ends,
// never every fetched byte); Records and Response are never set.
type FetchedBatch struct {
	BaseOffset int64
	Batch
}

// FetchSink is implemented by a Sink that also wants the batches consumers
// and followers fetched.
type FetchSink interface {
	Fetch(f *Fetch)
}

// auxRequest is what decode keeps of a pending request of an API other than
// Produce that it decodes (Fetch, InitProducerId, EndTxn).
type auxRequest struct {
	time      time.Time
	clientID  *string
	replicaID int32
	isolation int8
	// InitProducerId and EndTxn.
	txnID      *string
	producerID int64
	epoch      int16
	commit     bool
}

// fetchRequest reads who fetched from the body of a FetchRequest and keeps
// the request pending.
func (c *Conn) fetchRequest(dir *direction, h requestHeader, clientID *string, body []byte, pos int64, ts time.Time) {
	d := c.d
	defer d.release()
	p := pending{corr: h.corr, key: h.key, version: h.version, flexible: h.flexible}
	req := &d.freq
	req.Default()
	req.Version = h.version
	if err := req.UnsafeReadFrom(body); err != nil {
		d.errorf(c, dir.fromA, pos, "fetch v%d request correlation %d: %v", h.version, h.corr, err)
	} else {
		rid := req.ReplicaID
		if h.version >= 15 {
			rid = req.ReplicaState.ID
		}
		p.aux = &auxRequest{time: ts, clientID: clientID, replicaID: rid, isolation: req.IsolationLevel}
	}
	c.push(p)
}

// fetchResponse walks the body of the FetchResponse answering p and hands
// the batches to the FetchSink.
func (c *Conn) fetchResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	d := c.d
	f := &Fetch{
		Conn:          c.info,
		ClientID:      p.aux.clientID,
		CorrelationID: p.corr,
		Version:       p.version,
		ReplicaID:     p.aux.replicaID,
		RequestTime:   p.aux.time,
		ResponseTime:  ts,
	}
	f.IsolationLevel = p.aux.isolation
	if err := d.parseFetchResponse(f, body); err != nil {
		d.errorf(c, dir.fromA, pos, "fetch v%d response correlation %d: %v", p.version, p.corr, err)
		if len(f.Partitions) == 0 {
			return
		}
	}
	d.stats.FetchResponses++
	for i := range f.Partitions {
		fp := &f.Partitions[i]
		for j := range fp.Batches {
			b := &fp.Batches[j].Batch
			b.TopicID, b.Partition = fp.TopicID, fp.Partition
			if !b.Corrupt {
				d.stats.FetchedBatches++
			}
		}
	}
	if d.ssink == nil { // else the caller resolves from the one Shared
		d.shared.ResolveFetch(f)
	}
	d.fsink.Fetch(f)
}

// Smallest topic and partition of a FetchResponse on the wire, by version
// range (before v12, v12, v13+): a count the bytes left cannot hold is
// refused before anything is allocated for it.
var (
	minFetchTopic     = [3]int{6, 3, 18}
	minFetchPartition = [3]int{18, 15, 15}
)

func fetchRange(v int16) int {
	switch {
	case v >= 13:
		return 2
	case v >= 12:
		return 1
	}
	return 0
}

// parseFetchResponse walks a FetchResponse body of version f.Version into
// f.Partitions. On bytes it cannot walk it stops and says why, keeping the
// partitions read before.
func (d *Decoder) parseFetchResponse(f *Fetch, body []byte) error {
	v := f.Version
	flexible := v >= 12
	r := kbin.Reader{Src: body}
	if v >= 1 {
		r.Int32() // throttle_time_ms
	}
	if v >= 7 {
		r.Int16() // error_code
		r.Int32() // session_id
	}
	count := func(least int) (int, error) {
		n := readCount(&r, flexible)
		switch {
		case !r.Ok():
			return 0, errTruncated
		case n < 0:
			return 0, nil
		case n*int64(least) > int64(len(r.Src)):
			return 0, fmt.Errorf("%d entries announced in %d bytes", n, len(r.Src))
		}
		return int(n), nil
	}
	tags := func() error {
		if !flexible {
			return nil
		}
		n, _, err := skipTags(r.Src)
		if err != nil {
			return fmt.Errorf("tagged fields: %w", err)
		}
		r.Src = r.Src[n:]
		return nil
	}
	vr := fetchRange(v)
	topics, err := count(minFetchTopic[vr])
	if err != nil {
		return fmt.Errorf("topics: %w", err)
	}
	for range topics {
		var (
			topic string
			id    [16]byte
		)
		switch {
		case v >= 13:
			id = r.Uuid()
		case flexible:
			topic = r.UnsafeCompactString()
		default:
			topic = r.UnsafeString()
		}
		parts, err := count(minFetchPartition[vr])
		if err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		if topic != "" {
			topic = d.intern(topic)
		}
		// Sized to the count (checked against the bytes left) rather than
		// grown by append, which would hold twice the room.
		f.Partitions = slices.Grow(f.Partitions, parts)
		for range parts {
			fp := FetchedPartition{Topic: topic, TopicID: id, LastStableOffset: -1, LogStartOffset: -1}
			fp.Partition = r.Int32()
			fp.ErrorCode = r.Int16()
			fp.HighWatermark = r.Int64()
			if v >= 4 {
				fp.LastStableOffset = r.Int64()
			}
			if v >= 5 {
				fp.LogStartOffset = r.Int64()
			}
			if v >= 4 {
				aborted, err := count(16)
				if err != nil {
					return fmt.Errorf("aborted transactions: %w", err)
				}
				for range aborted {
					r.Int64() // producer_id
					r.Int64() // first_offset
					if err := tags(); err != nil {
						return err
					}
				}
			}
			if v >= 11 {
				r.Int32() // preferred_read_replica
			}
			var records []byte
			if flexible {
				records = r.CompactNullableBytes()
			} else {
				records = r.NullableBytes()
			}
			if err := tags(); err != nil {
				return err
			}
			if !r.Ok() {
				return errTruncated
			}
			fp.Batches = d.fetchedBatches(records)
			f.Partitions = append(f.Partitions, fp)
		}
		if err := tags(); err != nil {
			return err
		}
	}
	if err := tags(); err != nil {
		return err
	}
	if !r.Ok() {
		return errTruncated
	}
	return nil
}

// errTruncated: a fetch response ended inside a field.
var errTruncated = fmt.Errorf("truncated")

// fetchedBatches walks the record batches of a fetched partition. A batch
// cut short at the end (the broker stops at the fetch's byte limit) ends the
// walk silently, as does anything else that does not walk: fetched data is
// evidence only where it is whole.
func (d *Decoder) fetchedBatches(records []byte) []FetchedBatch {
	var out []FetchedBatch
	for off := 0; off+17 <= len(records); {
		b := records[off:]
		var (
			batch Batch
			n     int
			err   error
		)
		switch int8(b[16]) {
		case 2:
			var ok bool
			if batch, n, ok = recordBatchAt(b); !ok {
				err = errTruncated
			}
		case 0, 1:
			// A legacy set runs to the next RecordBatch; its offsets are
			// each message's own, the first one's kept.
			batch, n, err = d.legacySet(b)
		default:
			return out
		}
		if err != nil {
			return out
		}
		// A corrupt batch is kept, marked: its bytes are not what was
		// written, so detect takes it for no evidence.
		out = append(out, FetchedBatch{BaseOffset: int64(binary.BigEndian.Uint64(b)), Batch: batch})
		off += n
	}
	return out
}
