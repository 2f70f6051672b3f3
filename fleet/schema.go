package fleet

import (
	"errors"
	"fmt"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// The attempt record, version 1. One Kafka record per event; its value is
// (u: uvarint, s: zig-zag varint, str: u length then bytes, addr: a family
// byte 0 (none), 4 or 6, the address, a big-endian u16 port):
//
//	version   byte = 1; a reader refuses any other (ErrVersion)
//	kind      byte: 1 attempt (a produce exchange), 2 connection end,
//	          3 EndTxn, 4 InitProducerId; a reader refuses a kind it does
//	          not know (ErrKind), and the consumer counts and skips it
//	host      str   the capture host
//	run       u     the publisher's run, random: a restarted host numbers its
//	                connections anew, so (host, run) is one stream
//	seq       u     the record's place in its stream, from 1
//	at        s     capture time, Unix ns, when the host's decode handed the
//	                event over; never decreasing in a stream
//	conn      u     the host's connection ID (decode.ConnInfo.ID)
//	client    addr
//	broker    addr
//
// An attempt goes on:
//
//	flags     u: 1 responded, 2 connection details follow, 4 client.id
//	          not null, 8 transactional.id not null, 16 cluster named
//	[details] detected_by str, first_seen s (ns before at), software name
//	          str, software version str, api_versions s (-1: none sent),
//	          sasl mechanism str, sasl user str, sasl failed byte; in the
//	          first attempt of a connection and again every DetailEvery
//	[client.id str] [transactional.id str] [cluster str]
//	correlation_id s, version s, acks s, timeout_ms s
//	request   s     ns before at
//	in_flight u
//	responded: response s (ns after the request), throttle_ms s
//	else:      no_response byte (1 acks=0, 2 connection closed, 3 bytes
//	           lost, 4 later response seen, 5 end of capture, 6 response
//	           malformed, 7 evicted; 255: str follows)
//	batches   u, then each:
//	  bflags u: 1 corrupt, 2 topic ID follows, 4 response, 8 record
//	           prints, 16 records, 32 response error message
//	  topic str, [topic_id 16 bytes], partition s, magic byte, crc u32,
//	  attributes s, last_offset_delta s, first_timestamp s, max_timestamp
//	  s (after first), producer_id s, producer_epoch s, first_sequence s,
//	  num_records s, length u, hash u64
//	  [response] error_code s, base_offset s, log_append_time s,
//	           log_start_offset s, record_errors u, [error_message str]
//	  [prints] u, each: hash u64, index s (after the previous one's + 1),
//	           offset_delta s (after index)
//	  [records] u, each: offset_delta s, timestamp s (after
//	           first_timestamp), key and value (s full length, -1 null; str
//	           of the bytes kept), headers u, each key str and value
//
// A connection end goes on with by byte (0 none, 1 client, 2 broker), how
// byte (1 fin, 2 rst, 3 end of capture, 4 idle, 5 evicted; 255: str
// follows) and time s (ns before at).
//
// An EndTxn (decode.EndTxn: the request and its answer; the connection is
// the producer's to its transaction coordinator) goes on (txn.go):
//
//	flags     u: 1 responded, 2 client.id not null, 4 commit (else abort)
//	[client.id str]
//	transactional_id str, correlation_id s, version s, producer_id s,
//	producer_epoch s
//	request   s     ns before at
//	responded: response s (ns after the request), error_code s,
//	           bumped_epoch s (-1: none; EndTxn v5+)
//
// An InitProducerId (decode.InitProducerID, always answered; only those of
// a transactional.id that succeeded, the only ones detect reads) goes on:
//
//	flags     u: 1 client.id not null, 2 transactional.id not null
//	[client.id str] [transactional.id str]
//	correlation_id s, version s
//	request   s     ns before at
//	response  s     ns after the request
//	old_producer_id s, old_producer_epoch s, error_code s, producer_id s,
//	producer_epoch s
//
// Both are keyed as the producer's attempts are (Key: the client's IP and
// client.id, which a client sends alike on its connections to the
// coordinator and to the partitions' leaders), so that they reach the
// partition, and the correlation, that has the producer's attempts, from
// whichever host captured the coordinator's traffic. Kinds 3 and 4 came
// after the first release of version 1: a reader of then refuses them as
// a kind it does not know, counts them malformed and skips them (its
// verdicts are those without the transactions, as before), so the version
// stayed 1. A kind is added the same way; a change to the layout of a kind
// is a new version.
//
// Fetch responses are not published: a fetched batch names no producer
// (a non-idempotent batch carries no producer ID, and no batch carries the
// client's address or client.id), so it cannot be keyed to the partition
// of the producer's attempts; it would have to go to every partition, and
// every consumer group reads every batch again. A correlation's verdicts
// rest on the produce answers alone (evidence produce_responses). That is
// conservative: the fetched copies confirm a verdict, find a second copy
// the answers did not show (any verdict to duplicated) or show one copy
// of an unconfirmed batch (to single); they never take back a duplicated
// verdict, so a correlation never claims a duplicate that analyze with
// the fetches would not. It may miss one the fetches alone show, or leave
// unconfirmed what they decide.
//
// Times are deltas from at, so that most take two to four bytes. The
// record prints (10 bytes a record) and records go only with the batches
// whose records a correlation may match (Encoder, hot.go).

// Version is the schema version, the first byte of every record value.
const Version = 1

// Kind is what a record carries.
type Kind uint8

const (
	// KindAttempt: one produce exchange (decode.Exchange).
	KindAttempt Kind = 1
	// KindConnEnd: how one connection ended (decode.ConnEnd).
	KindConnEnd Kind = 2
	// KindEndTxn: one EndTxn request and its answer (decode.EndTxn).
	KindEndTxn Kind = 3
	// KindInitProducerID: one InitProducerId exchange
	// (decode.InitProducerID).
	KindInitProducerID Kind = 4
)

// ErrVersion is the error of a record of another schema version.
var ErrVersion = errors.New("fleet: attempt record of an unknown schema version")

// ErrKind is the error of a record of a kind this reader does not know (a
// later release's): skipped, as a malformed record is.
var ErrKind = errors.New("fleet: attempt record of an unknown kind")

// Header is what every record starts with: where and when.
type Header struct {
	Host string
	Run  uint64
	Seq  uint64
	At   time.Time
}

// Attempt flags.
const (
	flagResponded = 1 << iota
	flagDetails
	flagClientID
	flagTxnID
	flagCluster
)

// Batch flags.
const (
	bflagCorrupt = 1 << iota
	bflagTopicID
	bflagResponse
	bflagPrints
	bflagRecords
	bflagErrorMessage
)

var noResponses = []decode.NoResponse{"", decode.NoResponseAcks0, decode.NoResponseClosed, decode.NoResponseBytesLost,
	decode.NoResponseLaterSeen, decode.NoResponseEndOfCapture, decode.NoResponseMalformed, decode.NoResponseEvicted}

var endHows = []decode.EndHow{"", decode.EndFIN, decode.EndRST, decode.EndOfCapture, decode.EndIdle, decode.EndEvicted}

func header(w *writer, kind Kind, h Header, c *decode.ConnInfo) {
	w.byte(Version)
	w.byte(byte(kind))
	w.str(h.Host)
	w.uvarint(h.Run)
	w.uvarint(h.Seq)
	w.varint(h.At.UnixNano())
	var ci decode.ConnInfo
	if c != nil {
		ci = *c
	}
	w.uvarint(ci.ID)
	w.addr(ci.Client)
	w.addr(ci.Broker)
}

// AppendAttempt appends the record of x to dst: details says whether the
// connection's details go with it; batch i's record prints and records go
// with it when full(i) (nil: none), the prints from Batch.RecordPrints,
// so full is called during the Sink call that got x.
func AppendAttempt(dst []byte, h Header, x *decode.Exchange, details bool, full func(i int) bool) []byte {
	w := writer{buf: dst}
	header(&w, KindAttempt, h, x.Conn)
	at := h.At.UnixNano()
	flags := uint64(0)
	if x.Responded {
		flags |= flagResponded
	}
	if details && x.Conn != nil {
		flags |= flagDetails
	}
	if x.ClientID != nil {
		flags |= flagClientID
	}
	if x.TransactionalID != nil {
		flags |= flagTxnID
	}
	if x.Cluster != "" {
		flags |= flagCluster
	}
	w.uvarint(flags)
	if flags&flagDetails != 0 {
		c := x.Conn
		w.str(c.DetectedBy)
		w.varint(at - c.FirstSeen.UnixNano())
		w.str(c.ClientSoftwareName)
		w.str(c.ClientSoftwareVersion)
		if c.ApiVersionsSent {
			w.i16(c.ApiVersionsVersion)
		} else {
			w.varint(-1)
		}
		w.str(c.SASLMechanism)
		w.str(c.SASLUser)
		w.boolean(c.SASLFailed)
	}
	if x.ClientID != nil {
		w.str(*x.ClientID)
	}
	if x.TransactionalID != nil {
		w.str(*x.TransactionalID)
	}
	if x.Cluster != "" {
		w.str(x.Cluster)
	}
	w.i32(x.CorrelationID)
	w.i16(x.Version)
	w.i16(x.Acks)
	w.i32(x.TimeoutMillis)
	req := x.RequestTime.UnixNano()
	w.varint(at - req)
	w.count(x.InFlight)
	if x.Responded {
		w.varint(x.ResponseTime.UnixNano() - req)
		w.i32(x.ThrottleMillis)
	} else {
		code := 255
		for i, n := range noResponses {
			if n == x.NoResponse {
				code = i
			}
		}
		w.byte(byte(code))
		if code == 255 {
			w.str(string(x.NoResponse))
		}
	}
	w.count(len(x.Batches))
	for i := range x.Batches {
		b := &x.Batches[i]
		withFull := full != nil && full(i)
		var prints []decode.RecordPrint
		if withFull {
			prints = b.RecordPrints()
		}
		bf := uint64(0)
		if b.Corrupt {
			bf |= bflagCorrupt
		}
		if b.TopicID != ([16]byte{}) {
			bf |= bflagTopicID
		}
		if b.Response != nil {
			bf |= bflagResponse
			if b.Response.ErrorMessage != nil {
				bf |= bflagErrorMessage
			}
		}
		if len(prints) > 0 {
			bf |= bflagPrints
		}
		if withFull && len(b.Records) > 0 {
			bf |= bflagRecords
		}
		w.uvarint(bf)
		w.str(b.Topic)
		if bf&bflagTopicID != 0 {
			w.raw(b.TopicID[:])
		}
		w.i32(b.Partition)
		w.byte(byte(b.Magic))
		w.u32(b.CRC)
		w.i16(b.Attributes)
		w.i32(b.LastOffsetDelta)
		w.varint(b.FirstTimestamp)
		w.varint(b.MaxTimestamp - b.FirstTimestamp)
		w.varint(b.ProducerID)
		w.i16(b.ProducerEpoch)
		w.i32(b.FirstSequence)
		w.i32(b.NumRecords)
		w.count(b.Length)
		w.u64(b.Hash)
		if r := b.Response; r != nil {
			w.i16(r.ErrorCode)
			w.varint(r.BaseOffset)
			w.varint(r.LogAppendTime)
			w.varint(r.LogStartOffset)
			w.count(r.RecordErrors)
			if r.ErrorMessage != nil {
				w.str(*r.ErrorMessage)
			}
		}
		if bf&bflagPrints != 0 {
			w.count(len(prints))
			prev := int32(-1)
			for _, p := range prints {
				w.u64(p.Hash)
				w.i32(p.Index - prev - 1)
				w.i32(p.OffsetDelta - p.Index)
				prev = p.Index
			}
		}
		if bf&bflagRecords != 0 {
			w.count(len(b.Records))
			for _, rec := range b.Records {
				w.i32(rec.OffsetDelta)
				w.varint(rec.TimestampMillis - b.FirstTimestamp)
				w.nullable(rec.Key, rec.KeyLen)
				w.nullable(rec.Value, rec.ValueLen)
				w.count(len(rec.Headers))
				for _, hd := range rec.Headers {
					w.str(hd.Key)
					w.nullable(hd.Value, hd.ValueLen)
				}
			}
		}
	}
	return w.buf
}

// AppendConnEnd appends the record of connection c's end e to dst.
func AppendConnEnd(dst []byte, h Header, c *decode.ConnInfo, e decode.ConnEnd) []byte {
	w := writer{buf: dst}
	header(&w, KindConnEnd, h, c)
	switch e.By {
	case decode.EndByClient:
		w.byte(1)
	case decode.EndByBroker:
		w.byte(2)
	default:
		w.byte(0)
	}
	code := 255
	for i, n := range endHows {
		if n == e.How {
			code = i
		}
	}
	w.byte(byte(code))
	if code == 255 {
		w.str(string(e.How))
	}
	w.varint(h.At.UnixNano() - e.Time.UnixNano())
	return w.buf
}

// Record is one record read back, before its connection is known: what
// Decode gives, and Decoder turns into an Event.
type Record struct {
	Kind Kind
	Header
	// ConnID, Client and Broker name the connection as its host saw it;
	// Details, when set, are the rest of its decode.ConnInfo.
	ConnID  uint64
	Conn    decode.ConnInfo
	Details bool
	// Exchange, for KindAttempt: its Conn is nil until a Decoder sets it.
	Exchange *decode.Exchange
	// End, for KindConnEnd.
	End decode.ConnEnd
	// EndTxn, for KindEndTxn, and InitProducerID, for KindInitProducerID:
	// their Conn is nil until a Decoder sets it.
	EndTxn         *decode.EndTxn
	InitProducerID *decode.InitProducerID
}

// maxRecordsPerBatch bounds the records a batch of a record carries.
const maxRecordsPerBatch = 1000

// Decode reads one record value. Nothing in it is trusted: a count larger
// than the bytes left, a value out of its range or a record cut short is
// an error naming the byte; a record of another version is ErrVersion.
// The Record's strings and slices are its own.
func Decode(value []byte) (Record, error) {
	r := &reader{b: value}
	var rec Record
	if v := r.byte(); r.err == nil && v != Version {
		return rec, fmt.Errorf("%w %d", ErrVersion, v)
	}
	rec.Kind = Kind(r.byte())
	rec.Host = r.str()
	rec.Run = r.uvarint()
	rec.Seq = r.uvarint()
	at := r.varint()
	rec.At = time.Unix(0, at)
	rec.ConnID = r.uvarint()
	rec.Conn.ID = rec.ConnID
	rec.Conn.Client = r.addr()
	rec.Conn.Broker = r.addr()
	switch rec.Kind {
	case KindAttempt:
		rec.Exchange = readAttempt(r, &rec, at)
	case KindConnEnd:
		switch r.byte() {
		case 1:
			rec.End.By = decode.EndByClient
		case 2:
			rec.End.By = decode.EndByBroker
		}
		code := int(r.byte())
		switch {
		case code == 255:
			rec.End.How = decode.EndHow(r.str())
		case code < len(endHows):
			rec.End.How = endHows[code]
		default:
			r.fail(fmt.Errorf("connection end %d", code))
		}
		rec.End.Time = time.Unix(0, at-r.varint())
	case KindEndTxn:
		rec.EndTxn = readEndTxn(r, at)
	case KindInitProducerID:
		rec.InitProducerID = readInitProducerID(r, at)
	default:
		if r.err == nil {
			r.fail(fmt.Errorf("%w %d", ErrKind, rec.Kind))
		}
	}
	if r.err == nil && r.left() != 0 {
		r.fail(fmt.Errorf("%d bytes after the record", r.left()))
	}
	if r.err != nil {
		return Record{}, fmt.Errorf("fleet: attempt record: %w", r.err)
	}
	return rec, nil
}

func readAttempt(r *reader, rec *Record, at int64) *decode.Exchange {
	x := &decode.Exchange{}
	flags := r.uvarint()
	if flags&flagDetails != 0 {
		c := &rec.Conn
		rec.Details = true
		c.DetectedBy = r.str()
		c.FirstSeen = time.Unix(0, at-r.varint())
		c.ClientSoftwareName = r.str()
		c.ClientSoftwareVersion = r.str()
		if v := r.varint(); v >= 0 && v < 1<<15 {
			c.ApiVersionsSent, c.ApiVersionsVersion = true, int16(v)
		}
		c.SASLMechanism = r.str()
		c.SASLUser = r.str()
		c.SASLFailed = r.boolean()
	}
	if flags&flagClientID != 0 {
		s := r.str()
		x.ClientID = &s
	}
	if flags&flagTxnID != 0 {
		s := r.str()
		x.TransactionalID = &s
	}
	if flags&flagCluster != 0 {
		x.Cluster = r.str()
	}
	x.CorrelationID = r.i32()
	x.Version = r.i16()
	x.Acks = r.i16()
	x.TimeoutMillis = r.i32()
	req := at - r.varint()
	x.RequestTime = time.Unix(0, req)
	x.InFlight = int(min(r.uvarint(), 1<<20))
	if flags&flagResponded != 0 {
		x.Responded = true
		x.ResponseTime = time.Unix(0, req+r.varint())
		x.ThrottleMillis = r.i32()
	} else {
		code := int(r.byte())
		switch {
		case code == 255:
			x.NoResponse = decode.NoResponse(r.str())
		case code < len(noResponses):
			x.NoResponse = noResponses[code]
		default:
			r.fail(fmt.Errorf("no-response reason %d", code))
		}
	}
	n := r.length(minBatchBytes)
	if n > 0 {
		x.Batches = make([]decode.Batch, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		readBatch(r, &x.Batches[i])
	}
	return x
}

// minBatchBytes is the fewest bytes a batch takes in a record: every field
// at its shortest (a flags byte, an empty topic, one byte for each varint,
// the CRC's 4 and the hash's 8). Decode refuses a count of batches the
// bytes left cannot hold at that size, and no fewer: a batch of real
// traffic takes more (its timestamp alone 6 bytes), but what AppendAttempt
// wrote must decode whatever its values.
const minBatchBytes = 25

func readBatch(r *reader, b *decode.Batch) {
	bf := r.uvarint()
	b.Corrupt = bf&bflagCorrupt != 0
	b.Topic = r.str()
	if bf&bflagTopicID != 0 {
		if id := r.take(16); id != nil {
			b.TopicID = [16]byte(id)
		}
	}
	b.Partition = r.i32()
	b.Magic = int8(r.byte())
	b.CRC = r.u32()
	b.Attributes = r.i16()
	b.LastOffsetDelta = r.i32()
	b.FirstTimestamp = r.varint()
	b.MaxTimestamp = b.FirstTimestamp + r.varint()
	b.ProducerID = r.varint()
	b.ProducerEpoch = r.i16()
	b.FirstSequence = r.i32()
	b.NumRecords = r.i32()
	b.Length = int(min(r.uvarint(), 1<<31))
	b.Hash = r.u64()
	if bf&bflagResponse != 0 {
		p := &decode.PartitionResponse{}
		p.ErrorCode = r.i16()
		p.BaseOffset = r.varint()
		p.LogAppendTime = r.varint()
		p.LogStartOffset = r.varint()
		p.RecordErrors = int(min(r.uvarint(), 1<<20))
		if bf&bflagErrorMessage != 0 {
			s := r.str()
			p.ErrorMessage = &s
		}
		b.Response = p
	}
	if bf&bflagPrints != 0 {
		n := r.length(10)
		if n > decode.MaxBatchPrints {
			r.fail(fmt.Errorf("%d record prints", n))
			return
		}
		prints := make([]decode.RecordPrint, n)
		prev := int32(-1)
		for i := range prints {
			p := &prints[i]
			p.Hash = r.u64()
			p.Index = prev + 1 + r.i32()
			p.OffsetDelta = p.Index + r.i32()
			prev = p.Index
		}
		b.SetRecordPrints(prints)
	}
	if bf&bflagRecords != 0 {
		n := r.length(4)
		if n > maxRecordsPerBatch {
			r.fail(fmt.Errorf("%d records", n))
			return
		}
		b.Records = make([]decode.Record, n)
		for i := range b.Records {
			rec := &b.Records[i]
			rec.OffsetDelta = r.i32()
			rec.TimestampMillis = b.FirstTimestamp + r.varint()
			rec.Key, rec.KeyLen = r.nullable()
			rec.Value, rec.ValueLen = r.nullable()
			nh := r.length(2)
			if nh > decode.MaxRecordHeaders {
				r.fail(fmt.Errorf("%d record headers", nh))
				return
			}
			if nh > 0 {
				rec.Headers = make([]decode.RecordHeader, nh)
			}
			for j := range rec.Headers {
				h := &rec.Headers[j]
				h.Key = r.str()
				h.Value, h.ValueLen = r.nullable()
			}
		}
	}
}
