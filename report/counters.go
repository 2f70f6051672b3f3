package report

// Counters are a live run's running totals, gathered by pipeline from every
// stage. Each field is cumulative since the run began; Metrics.Update turns
// them into Prometheus counters and StatusLine into the status line. Like
// Summary, it is plain data so that report needs no stage but detect.
type Counters struct {
	// Capture stage.
	Packets       int64 // packets read
	Bytes         int64 // captured bytes of the packets read
	Drops         int64 // packets the kernel dropped (ring full): never analyzed
	KernelPackets int64 // packets the kernel handed to the socket, dropped ones included
	Gaps          int64 // holes in TCP streams

	// Decode stage.
	ProduceRequests  int64
	ProduceResponses int64
	Batches          int64
	Records          int64
	Malformed        int64 // frames that did not parse
	Connections      int64 // Kafka connections seen

	// Bounded state: what was let go to keep memory bounded.
	EvictedConnections int64 // idle connections forgotten
	EvictedBatches     int64 // batch fingerprints forgotten before a resend could match them
	EvictedPending     int64 // requests forgotten before their response

	// Topics holds produce traffic per topic (Batches and Records are read;
	// findings per topic come from the findings themselves).
	Topics []TopicCount
}
