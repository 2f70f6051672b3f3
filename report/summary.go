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
	// SnapCut counts the packets the snap length cut short (captured
	// length below the original), SnapCutBytes the bytes they lost;
	// SnapLen is the largest captured length among them: the snap length
	// the capture was taken with. Zero when no packet was cut.
	SnapLen      int64
	SnapCut      int64
	SnapCutBytes int64

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
	// EchoedRequests counts the requests seen on two connections (a
	// proxy's two legs, NAT, a capture given twice), each counted once;
	// EchoLegs names the first pairs of connections they came on.
	EchoedRequests int64
	EchoLegs       []EchoLeg
	ByVerdict      map[string]int64
	ByTopic        []TopicCount

	// Dropped counts what bounds on untrusted input left out or cut
	// (dropped.go); all zero on an ordinary capture.
	Dropped Dropped

	// TLS is what the run saw of TLS connections (tls.go); nil when it
	// saw none and read no key log.
	TLS *TLSSummary

	// Errors holds input errors that ended reading early (file and position).
	Errors []string
	// Interrupted names the signal that stopped the reading ("SIGINT");
	// empty when the inputs were read to their end.
	Interrupted string
	// InputLimit, when not 0, is the capture bytes read when the bound on
	// them (--max-input-bytes) stopped the reading.
	InputLimit int64
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

// EchoLeg is a pair of connections that carried copies of the same
// requests: the First's were kept, the Second's counted once.
type EchoLeg struct {
	FirstClient, FirstBroker   netip.AddrPort
	SecondClient, SecondBroker netip.AddrPort
	Requests                   int64
}

// TopicCount counts produce traffic and findings per topic.
type TopicCount struct {
	Topic      string
	Batches    int64
	Records    int64
	Findings   int64
	Duplicated int64
}
