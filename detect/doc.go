// Package detect finds record batches that a Kafka producer sent more than
// once, and says what the broker's answers show the log holds of each.
//
// # Place in the flow
//
// capture -> decode -> detect -> report. detect takes complete produce
// exchanges (decode.Exchange, handed to Detector.Produce, which satisfies
// decode.Sink) and gives Findings: one per batch sent more than once by a
// client, on one connection or several, with every attempt, the cause of each resend and a Verdict.
// A capture file is read to its end and Flush returns the findings sorted;
// a live capture (Options.Live) has each finding reported through
// OnFinding as soon as it is decided, and Advance moves packet time on
// when no traffic flows.
// It imports decode for the Exchange type and what it holds, and for the
// names of error codes (decode.ErrorName); it must never import capture or
// gopacket (packets), profile, report (output) or pipeline, and it never
// sees Kafka bytes. Producer profiles are package profile's, built from the same
// exchanges and from the findings detect gives (Finding.ID names a live
// finding across its reports).
//
// # Grouping
//
// Two attempts carry the same batch when they went to the same
// topic-partition (the topic ID when the request named one, else the name)
// and either have the same bytes under the batch CRC (decode.Batch.Hash and
// CRC equal: Match "bytes"), or, for an idempotent producer (ProducerID >=
// 0), the same producer ID, epoch, first sequence and last offset delta
// (Match "sequence" when the bytes differ: librdkafka rebuilds a batch
// before a retry), and were sent by the same client: on the same connection,
// or (Options.Scope) on any connection from the same client IP with the same
// client.id, or, for an idempotent producer, with the same producer ID and
// epoch from any address (a client re-sends on a new connection after a
// timeout or a close, and to another broker after NOT_LEADER_OR_FOLLOWER).
// A batch is one finding with all its attempts; its Scope is "connection"
// when they were all sent on one connection, "client" when they span
// connections. A non-idempotent retry whose bytes were rebuilt cannot be
// told from new data and is not grouped. One request that names a partition
// twice with the same batch is one send, not a resend.
//
// # Causes
//
// Each resend is judged against the attempt sent just before it: an answer
// captured strictly before the resend was sent caused it (broker_error, or
// not_a_retry after success or DUPLICATE_SEQUENCE_NUMBER); none captured by
// then is a client_timeout, or connection_closed when that attempt's
// connection closed without an answer and the resend went out on another
// connection; after an acks=0 request, which is never answered and never
// retried, it is not_a_retry.
//
// # Ownership and state
//
// Produce reads the Exchange during the call and keeps none of it but the
// *decode.ConnInfo and client.id pointers and the topic string, which decode
// never changes after handing them over. Each batch is remembered until
// Options.Window of packet time has passed after its last attempt (packet
// time, never wall-clock time: the newest request or response time seen in
// any exchange), and at most Options.MaxBatches batches are remembered; the
// oldest is decided early beyond that and counted in Stats.Evicted. A batch
// whose attempts arrive further apart than Window is therefore not grouped.
// The index by client is the index of the remembered batches: a batch
// forgotten leaves nothing behind.
// Decided findings are kept until Flush returns them in order, so memory
// grows with the findings of a run, not with its traffic.
//
// # Fetched data and transactions
//
// Detector.Fetch (decode.FetchSink) takes the batches consumers and
// followers fetched, and decides or confirms verdicts with them
// (Finding.Evidence, evidence.go); Detector.InitProducerID and EndTxn
// (decode.TxnSink) link transactional batches to the outcome of their
// transaction (Finding.Transaction, txn.go). Without Live they are applied
// at Flush, so fetches after a batch's Window still count (OnFinding, called
// earlier, sees the finding without them); with Live, at each report, with
// what was seen by then.
//
// # Live
//
// With Options.Live a finding is decided as soon as the last attempt sent
// has an answer no retry can follow (NONE, DUPLICATE_SEQUENCE_NUMBER, an
// error kerr does not call retriable, or acks=0), else when Options.Settle
// of packet time has passed after its last attempt, or Window, or an
// eviction. Its batch stays remembered until Window: a later attempt
// reports the finding again with Finding.Revision one more. Findings are
// not kept once reported (unless Options.KeepFindings), so the memory of a
// run of days is that of one Window of batches, at most MaxBatches.
//
// # Bad input
//
// detect trusts decode's types but not their plausibility: a nil connection,
// missing partition responses, unknown error codes and out-of-order times
// are all taken as they come; nothing in an Exchange makes it panic. A
// Detector is not safe for concurrent use.
package detect
