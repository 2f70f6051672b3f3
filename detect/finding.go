package detect

import (
	"net/netip"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// Verdict says what the log holds of a batch that was sent more than once.
type Verdict string

const (
	// Duplicated: two or more attempts were appended at distinct base
	// offsets, so the log holds the batch more than once.
	Duplicated Verdict = "duplicated"
	// Deduplicated: the producer is idempotent and the broker answered a
	// resend with the original offset (with no error, or with an error that
	// carries the offset, such as REQUEST_TIMED_OUT), or with
	// DUPLICATE_SEQUENCE_NUMBER: the log holds the batch once.
	Deduplicated Verdict = "deduplicated"
	// Single: exactly one append confirmed, every other attempt rejected.
	Single Verdict = "single"
	// Unconfirmed: the capture cannot tell how many copies the log holds.
	Unconfirmed Verdict = "unconfirmed"
	// Rejected: every attempt was answered with an error that comes before
	// the append: the log does not hold the batch (lost, not duplicated).
	Rejected Verdict = "rejected"
)

// Verdicts returns every verdict, from the one that harms most to the one
// that harms least: the order in which reports list them.
func Verdicts() [5]Verdict {
	return [...]Verdict{Duplicated, Deduplicated, Single, Unconfirmed, Rejected}
}

// Cause says why an attempt after the first was sent.
type Cause string

const (
	// CauseClientTimeout: sent again before any answer to the earlier
	// attempt was captured (an answer captured at the same instant cannot
	// have caused the resend); Attempt.GapMillis approximates the client's
	// request timeout.
	CauseClientTimeout Cause = "client_timeout"
	// CauseBrokerError: the earlier attempt was answered with a retriable
	// error, named in Attempt.CauseError.
	CauseBrokerError Cause = "broker_error"
	// CauseNotARetry: the earlier attempt was answered with success (or
	// DUPLICATE_SEQUENCE_NUMBER, which clients take as success), or was sent
	// with acks=0, which no broker answers and no client retries, and the
	// same batch was still sent again (by the application or a client bug,
	// not a retry).
	CauseNotARetry Cause = "not_a_retry"
	// CauseConnectionClosed: the earlier attempt was sent on another
	// connection, which the broker's side ended (a FIN or an RST from the
	// broker's address: the broker, or a proxy or firewall in front of it)
	// with no answer to it captured, or which closed without the capture
	// showing who ended it; this attempt went out on a new connection after
	// that. Attempt.CauseError names the end ("broker RST"), empty when the
	// capture does not show it; the earlier Attempt's End holds its time.
	// A connection the client ended first (kgo, librdkafka and the Java
	// client close a connection whose request timed out) makes
	// CauseClientTimeout instead, with CauseError "client FIN" or "client
	// RST". Attempt.GapMillis is the time between the two sends.
	CauseConnectionClosed Cause = "connection_closed"
	// CauseAnswerLost: the earlier attempt was answered with success on the
	// wire, then the broker reset its connection (an RST within
	// AnswerLostWindow of the answer: a reset discards the data its
	// receiver has not read yet, and a capture point before the client
	// sees an answer the client may never get), and this attempt went out
	// on a new connection after the reset. The client never read the
	// answer: a retry, not the application sending again. CauseError is
	// "broker RST"; the earlier Attempt's Response and End hold the times.
	CauseAnswerLost Cause = "answer_lost"
)

// Scope says where the attempts of a finding were sent, and, in
// Options.Scope, which findings a Detector looks for.
type Scope string

const (
	// ScopeConnection: every attempt on one Kafka connection.
	ScopeConnection Scope = "connection"
	// ScopeClient: attempts on two or more connections of one client (the
	// same client IP and client.id, or, for an idempotent producer, the
	// same producer ID and epoch), to one broker or several.
	ScopeClient Scope = "client"
	// ScopeFleet: attempts seen by two or more capture hosts (each
	// Attempt.Host says its own), put together by a fleet correlation
	// (kdupcap correlate); a Detector never sets it.
	ScopeFleet Scope = "fleet"
	// ScopeBoth, only in Options.Scope: look for both kinds; each finding
	// says its own scope. It is the default.
	ScopeBoth Scope = ""
)

// Match says how the attempts of a finding were recognised as one batch.
type Match string

const (
	// MatchBytes: the same bytes under the batch CRC.
	MatchBytes Match = "bytes"
	// MatchSequence: the same producer ID, epoch, first sequence and last
	// offset delta (an idempotent batch rebuilt before the retry).
	MatchSequence Match = "sequence"
	// MatchRecords: the same records (key, value and headers) in batches
	// of other bytes (record-level findings).
	MatchRecords Match = "records"
)

// Kind says what a Finding is about.
type Kind string

const (
	// KindBatch: one record batch sent more than once (the same bytes, or
	// an idempotent batch's sequence span).
	KindBatch Kind = "duplicate"
	// KindRecordResend: records sent again in a batch of other bytes
	// (rebuilt, or re-batched with other records) after an attempt that
	// failed or went unanswered: a client retry.
	KindRecordResend Kind = "record_resend"
	// KindRecordDuplicate: records sent again although every earlier
	// attempt carrying them was answered with success before (or was
	// sent with acks=0): the application produced them twice.
	KindRecordDuplicate Kind = "record_duplicate"
)

// ProducerChange says how an idempotent producer changed between the
// attempts of a record-level finding.
type ProducerChange string

const (
	// ProducerChangeEpoch: the same producer ID, another epoch (librdkafka
	// bumps it after a timeout; KIP-360).
	ProducerChangeEpoch ProducerChange = "epoch"
	// ProducerChangeID: another producer ID (the client called
	// InitProducerId again, or restarted).
	ProducerChangeID ProducerChange = "producer_id"
)

// BatchRelation says how the batches of a record-level finding relate.
type BatchRelation string

const (
	// RelationRebuilt: every attempt's batch holds just these records, in
	// other bytes (a new CRC: re-encoded, new timestamps...).
	RelationRebuilt BatchRelation = "rebuilt"
	// RelationRebatched: some attempt's batch holds other records too.
	RelationRebatched BatchRelation = "rebatched"
)

// Finding is one record batch sent more than once, on one connection or on
// several of one client. ConnID, Client and Broker are the first attempt's;
// each Attempt says its own.
type Finding struct {
	// Kind is KindBatch, KindRecordResend or KindRecordDuplicate; the zero
	// value means KindBatch.
	Kind      Kind
	ConnID    uint64
	Client    netip.AddrPort
	Broker    netip.AddrPort
	ClientID  *string
	Topic     string
	TopicID   [16]byte // zero unless the request named the topic by ID (v13)
	Partition int32
	// Cluster names the cluster of the attempts' brokers: the name
	// decode.Options.Clusters gave, or the cluster ID the capture's
	// Metadata or DescribeCluster responses showed; empty when unknown.
	Cluster string

	ProducerID    int64
	ProducerEpoch int16
	FirstSequence int32
	NumRecords    int32
	BatchCRC      uint32
	Magic         int8
	Idempotent    bool
	Match         Match
	// Scope is ScopeConnection when every attempt was sent on one
	// connection, ScopeClient when they span connections; ScopeFleet when
	// a fleet correlation put together attempts of two or more hosts.
	Scope Scope
	// StableID names the finding from its producer and its batch, the
	// same in every report of it by any correlating instance (so that a
	// rebalance's redelivery is idempotent for consumers); set by a fleet
	// correlation, empty otherwise (the JSON "id" key).
	StableID string

	Verdict Verdict
	// AppendedOffsets are the distinct base offsets at which the responses
	// show the log holds this batch, ascending; when fetched data decided or
	// joined in the verdict (Proof not ProofProduce), the fetched
	// offsets too.
	AppendedOffsets []int64
	// Reason explains the verdict in one sentence.
	Reason string
	// Proof says what decided Verdict: the produce responses, the
	// batches consumers or followers fetched, or both (fetched.go). It is
	// the JSON "evidence" key.
	Proof Proof
	// FetchedOffsets are the distinct base offsets at which fetched data
	// held this batch, ascending; Fetches the fetch exchange that first
	// showed each. Nil when no fetch in the capture held it.
	FetchedOffsets []int64
	Fetches        []WireExchange
	// Transaction is the transaction of the batch when its producer ID is
	// linked to a transactional.id by InitProducerId or EndTxn; nil
	// otherwise.
	Transaction *Transaction

	// Attempts in the order they were sent, at most MaxAttempts of them:
	// the first ones.
	Attempts []Attempt
	// AttemptsOmitted counts the attempts sent after the first MaxAttempts,
	// not kept (a client re-sending one batch without end must not make
	// the detector's memory and time grow with it).
	AttemptsOmitted int

	// Records are the first records of the batch (its first attempt's),
	// only when decode read them (decode.Options.Records); nil otherwise.
	// In a record-level finding: the records sent again (at most
	// MaxFindingRecords, the rest counted in RecordsOmitted), each with
	// its copies, its content known only when decode read it.
	Records []Record
	// Record-level findings only. NumRecords counts the records of the
	// finding; FirstSequence is -1, ProducerID -1 (or, for an idempotent
	// producer, the first attempt's: see ProducerChange), BatchCRC is the
	// first attempt's; AppendedOffsets and the verdict are the first
	// record's (every record of the finding shares its attempts).
	BatchRelation  BatchRelation
	RecordsOmitted int
	// ProducerChange, in a record-level finding of an idempotent
	// producer, says the records were sent again under another epoch of
	// the producer ID (an epoch bump) or under another producer ID, which
	// the broker cannot deduplicate; ProducerID and ProducerEpoch are then
	// the first attempt's, and each Attempt.Batch says its own. Empty
	// otherwise.
	ProducerChange ProducerChange

	// Revision counts the earlier reports of this finding: 0 for the first.
	// Only a streaming Detector (Options.Streaming) reports a finding
	// again, when another attempt of its batch arrives after it was
	// reported; the new report holds every attempt and replaces the
	// earlier ones.
	Revision int
	// ID names a streaming Detector's finding across its reports: given at
	// its first report and kept in every revision, distinct among the
	// findings of one Detector, never 0; 0 for a Detector without
	// Streaming, which reports each finding once. Its first attempt cannot name it (a first attempt
	// answered late comes after its retry, and record findings of one first
	// attempt may be several), so a consumer that replaces a finding's
	// earlier reports with its latest (profile.Profiler.Finding) keys them
	// by ID. It is bookkeeping, not part of the output.
	ID uint64
}

// The reasons an Attempt has no response that decode's Exchange.NoResponse
// does not give.
const (
	// NoResponsePartition: the response came but did not name the
	// attempt's partition.
	NoResponsePartition decode.NoResponse = "response did not name the partition"
	// NoResponseNotCaptured: the attempt's exchange was not answered and
	// gave no reason (an Exchange built by hand).
	NoResponseNotCaptured decode.NoResponse = "not in capture"
)

// Attempt is one ProduceRequest carrying the finding's batch.
type Attempt struct {
	// ConnID, Client and Broker name the connection the attempt was sent
	// on (ConnID as decode numbered it). Correlation IDs are per connection:
	// a resend on a new connection may repeat an earlier attempt's.
	ConnID        uint64
	Client        netip.AddrPort
	Broker        netip.AddrPort
	CorrelationID int32
	// Host is the capture host that saw the attempt, in a fleet
	// correlation; empty for a capture read here.
	Host          string
	Time          time.Time
	Version       int16
	Acks          int16
	TimeoutMillis int32
	// Response is nil when the capture holds no answer; NoResponse says why:
	// decode's Exchange.NoResponse, NoResponsePartition or
	// NoResponseNotCaptured.
	Response   *Response
	NoResponse decode.NoResponse
	// Batch describes the batch that carried the records, in a
	// record-level finding; nil in a batch finding.
	Batch *AttemptBatch
	// End is how the attempt's connection ended, when the capture showed
	// it before the finding was decided (decode.EndSink); nil otherwise.
	End *decode.ConnEnd
	// Cause is empty for the first attempt.
	Cause Cause
	// CauseError is the error name for CauseBrokerError; for a cause judged
	// by how the earlier attempt's connection ended, that end ("broker
	// RST", "client FIN"; decode.ConnEnd.String); else empty.
	CauseError string
	GapMillis  float64 // time since the previous attempt was sent; 0 for the first
}

// AttemptBatch is the batch of one attempt of a record-level finding.
type AttemptBatch struct {
	CRC        uint32
	NumRecords int32
	// ProducerID, ProducerEpoch and BaseSequence are the batch's header
	// fields; ProducerID is -1 when the producer is not idempotent.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

// Response is the broker's answer to one attempt for the finding's partition.
type Response struct {
	Time          time.Time
	ErrorCode     int16
	Error         string // "NONE" for 0, else the Kafka error name
	BaseOffset    int64
	LogAppendTime int64
	LatencyMillis float64
}
