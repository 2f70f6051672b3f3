package decode

import (
	"net/netip"
	"time"
)

// Conn identifies one Kafka connection as decode sees it. One ConnInfo is
// shared by every Exchange of the connection.
type ConnInfo struct {
	// ID numbers connections in the order they were first seen, from 1.
	ID uint64
	// Client sent the requests; Broker answered them.
	Client, Broker netip.AddrPort
	// How the connection was taken as Kafka: "port" (a configured Kafka
	// port) or "sniff" (its bytes parsed as Kafka request frames).
	DetectedBy string
	// FirstSeen is the time of the first byte of the connection decoded.
	FirstSeen time.Time
	// ClientSoftwareName and ClientSoftwareVersion are what the client
	// sent in an ApiVersions v3+ request (KIP-511) before its first
	// ProduceRequest on the connection; empty when none was captured.
	ClientSoftwareName, ClientSoftwareVersion string
	// ApiVersionsSent is true when the client sent an ApiVersions request
	// before its first ProduceRequest on the connection; ApiVersionsVersion
	// is then the highest version of those requests (0 otherwise). Clients
	// that send no software name are told apart by it: kafka-python before
	// 2.1.3 and kafka-go send v0, kafkajs v2 (profile's inference).
	ApiVersionsSent    bool
	ApiVersionsVersion int16
	// SASLMechanism is the mechanism of the connection's SASL
	// authentication answered before its first ProduceRequest ("PLAIN",
	// "SCRAM-SHA-256", "GSSAPI", ...); empty when none was captured.
	// SASLUser is the user it authenticated, set only once the broker
	// answered success: PLAIN's authcid, SCRAM's username, OAUTHBEARER's
	// authzid, each followed by " (authzid X)" when the client asked for
	// another authorization identity; empty when the mechanism does not
	// show it (GSSAPI) or authentication failed, which SASLFailed says.
	// No password, proof, nonce or token is ever kept.
	SASLMechanism, SASLUser string
	SASLFailed              bool
}

// Exchange is one ProduceRequest and, when the capture holds it, its
// ProduceResponse. decode hands an Exchange to its Sink once it is complete:
// when the response was decoded, at once for acks=0, or when the capture can
// no longer show the response (connection closed, bytes lost, a later
// response seen, end of input).
type Exchange struct {
	Conn            *ConnInfo
	ClientID        *string // nil: null client.id
	CorrelationID   int32
	Version         int16 // Produce API version
	Acks            int16
	TimeoutMillis   int32
	TransactionalID *string
	// Cluster names the cluster of the connection's broker, set by
	// Shared.Resolve (cluster.go): the name Options.Clusters gave its
	// address, else the cluster ID a Metadata or DescribeCluster response
	// of the capture showed for it so far; empty when none did.
	Cluster     string
	RequestTime time.Time // time of the packet completing the request frame
	// InFlight is how many ProduceRequests of the connection were awaiting
	// a response once this one was sent, itself included; 0 for acks=0,
	// which awaits none.
	InFlight int

	// Responded is true when the response was decoded; ResponseTime is then
	// the time of the packet completing the response frame.
	Responded      bool
	ResponseTime   time.Time
	ThrottleMillis int32
	// NoResponse says why there is no response when Responded is false
	// (one of the NoResponse constants); "" when Responded.
	NoResponse NoResponse

	// Batches holds one entry per record batch (or legacy message set) in
	// the request, in request order.
	Batches []Batch

	// frame is the array of the request's frame when its batches' kept
	// bytes point into it (lend.go), until the Sink is done.
	frame []byte
}

// NoResponse says why an Exchange has no response. Its values are printed
// as they are (the JSON "no_response" key, the table's "no response (...)").
type NoResponse string

const (
	// NoResponseAcks0: the request was sent with acks=0, which the broker
	// never answers.
	NoResponseAcks0 NoResponse = "acks=0"
	// NoResponseClosed: the connection closed before an answer.
	NoResponseClosed NoResponse = "connection closed"
	// NoResponseBytesLost: the request ended unanswered after a gap in the
	// responses, which may have held its answer.
	NoResponseBytesLost NoResponse = "bytes lost"
	// NoResponseLaterSeen: the answer to a later request on the connection
	// came first (a broker answers in order, so none will come).
	NoResponseLaterSeen NoResponse = "later response seen"
	// NoResponseEndOfCapture: the capture ended before an answer
	// (Decoder.EndOfInput, then the connection closed).
	NoResponseEndOfCapture NoResponse = "end of capture"
	// NoResponseMalformed: a response frame matched the request but did
	// not parse.
	NoResponseMalformed NoResponse = "response malformed"
	// NoResponseEvicted: more than Options.MaxPending requests were
	// awaiting a response on the connection, and this was the oldest; or
	// the connection was evicted (Conn.Evict) while it was pending.
	NoResponseEvicted NoResponse = "evicted"
)

// Batch is one record batch of a ProduceRequest, with its header fields and
// the broker's answer for its partition. Field names follow kmsg.
type Batch struct {
	Topic     string   // empty for Produce v13 unless a Metadata response named TopicID
	TopicID   [16]byte // zero before Produce v13
	Partition int32

	// Magic is 2 for a RecordBatch, 0 or 1 for a legacy message set.
	Magic int8
	// Corrupt is true when the CRC does not match the bytes it covers (the
	// RecordBatch's CRC-32C, or any legacy message's CRC-32): the batch was
	// damaged on the wire or forged, and is never matched (see Hash).
	// Stats.CorruptBatches counts it.
	Corrupt         bool
	CRC             uint32 // RecordBatch CRC-32C; for a legacy set, the first message's CRC
	Attributes      int16
	LastOffsetDelta int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	ProducerID      int64 // -1: not idempotent
	ProducerEpoch   int16
	FirstSequence   int32
	NumRecords      int32
	// Length is the batch's size in bytes on the wire.
	Length int
	// Hash fingerprints the bytes the CRC covers (attributes to the end for
	// a RecordBatch; every message from its CRC on for a legacy set), so
	// equal hashes mean the same batch bytes whatever baseOffset says: an
	// xxhash64 of every one of those bytes, never trusting the CRC (see
	// batch.go).
	Hash uint64

	// Records holds the first Options.Records records of the batch, nil
	// unless Options.Records is positive (or when none could be read).
	Records []Record

	// raw holds the batch's bytes (Options.RecordPrints) until its exchange was handed to the Sink;
	// printer fingerprints them (prints.go); prints is RecordPrints'
	// answer once printed (made at once when raw could not be kept).
	raw      []byte
	printer  *Printer
	prints   []RecordPrint
	printed  bool
	detached bool // see Detach
	kept     bool // see KeepPrints
	eager    bool // prints made at once, counted in rawPool.eager
	lent     bool // raw points into its exchange's frame (lend.go)

	// Response is the broker's answer for this partition; nil when the
	// exchange has no response or the response did not name the partition.
	Response *PartitionResponse
}

// RecordPrint fingerprints one record of a batch. Hash covers what the
// application gave the record, the key, the value and the headers as they
// are on the wire (for a legacy message: its key and value), and nothing a
// client may change when it sends the record again: not the timestamp
// (sarama stamps a record anew on every attempt), not the offset delta or
// the batch around it. Equal hashes in one partition mean the same record
// content, sent again by a retry or by the application.
type RecordPrint struct {
	Hash uint64
	// OffsetDelta is the record's offset relative to its batch's base
	// offset (for a legacy set, its index in the set).
	OffsetDelta int32
	// Index is the record's position in the batch, from 0.
	Index int32
}

// PartitionResponse is the broker's answer for one partition.
type PartitionResponse struct {
	ErrorCode      int16
	BaseOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime (or a dedup hint)
	LogStartOffset int64 // -1 before v5
	ErrorMessage   *string
	RecordErrors   int // count of record_errors (v8+)
}

// Sink receives complete exchanges. detect's Detector implements it.
type Sink interface {
	Produce(x *Exchange)
}
