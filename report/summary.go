package report

import (
	"net/netip"
	"time"
)

// Summary holds the counts of one run, filled by pipeline from every stage.
// It is plain data so that report needs no stage but detect.
type Summary struct {
	Files []string

	// Capture stage.
	Packets        int64
	Bytes          int64 // captured bytes of all packets
	Drops          int64 // packets the kernel dropped before reading (live capture only)
	TCPConnections int64
	Gaps           int64 // holes in TCP streams (packets the capture lost)
	GapBytes       int64

	// Decode stage.
	KafkaConnections []Connection
	// KafkaConnectionsOmitted counts the connections taken as Kafka but not
	// in KafkaConnections (a live run lists a bounded number).
	KafkaConnectionsOmitted int64
	Frames                  int64 // Kafka frames decoded, both directions
	ProduceRequests         int64
	ProduceResponses        int64
	Batches                 int64
	Records                 int64
	Malformed               int64 // frames that did not parse
	Resyncs                 int64 // times decoding resumed after losing frame boundaries
	// FetchResponses counts the FetchResponses decoded (consumers' and
	// followers'), FetchedBatches the whole record batches they held: the
	// fetched data findings may rest on.
	FetchResponses int64
	FetchedBatches int64

	// Detect stage.
	Findings int64
	// EvictedBatches counts the batches decided early because the bound on
	// batches remembered was reached; EvictedAge is how recent the
	// youngest of them was: re-sends later than that after their previous
	// attempt may have gone unmatched.
	EvictedBatches int64
	EvictedAge     time.Duration
	// ProducerExchangesOmitted counts the produce exchanges of producers
	// beyond the profiler's bound, in no producer profile.
	ProducerExchangesOmitted int64
	// RecordFindings counts the record-level findings among Findings
	// (record_resend and record_duplicate).
	RecordFindings int64
	ByVerdict      map[string]int64
	ByTopic        []TopicCount

	// TLS is what the run saw of TLS connections (tls.go); nil when it
	// saw none and read no key log.
	TLS *TLSSummary

	// Errors holds input errors that ended reading early (file and position).
	Errors []string
	// Interrupted names the signal that stopped the reading ("SIGINT");
	// empty when the inputs were read to their end.
	Interrupted string
}

// Connection is one TCP connection taken as Kafka.
type Connection struct {
	ID              uint64
	Client, Broker  netip.AddrPort
	DetectedBy      string // "port" or "sniff"
	ClientIDs       []string
	ProduceRequests int64
	// SASLMechanism, SASLUser and SASLFailed say what the connection's
	// latest SASL authentication showed: the mechanism, empty when none
	// was captured; the user it authenticated, empty when the mechanism
	// does not show it (GSSAPI) or it failed, which SASLFailed says.
	SASLMechanism string
	SASLUser      string
	SASLFailed    bool
}

// TopicCount counts produce traffic and findings per topic.
type TopicCount struct {
	Topic      string
	Batches    int64
	Records    int64
	Findings   int64
	Duplicated int64
}
