// Package detect finds record batches that a Kafka producer sent more than
// once, and says what the broker's answers show the log holds of each.
//
// # Place in the flow
//
//	capture -> decode -> detect -> profile -> report -> pipeline -> cmd/kdupcap
//
// detect takes complete produce exchanges (decode.Exchange, handed to
// Detector.Produce, which satisfies decode.Sink) and gives Findings: one per
// batch sent more than once by a client, on one connection or several, with
// every attempt, the cause of each resend and a Verdict. Flush returns the
// findings of a capture file sorted; with Options.Streaming (a live capture)
// OnFinding reports each as soon as it is decided, and Advance moves packet
// time on when no traffic flows. It imports decode for the Exchange type and
// what it holds, and for the names of error codes (decode.ErrorName); it must
// never import capture or gopacket (packets), profile, report (output) or
// pipeline, and it never sees Kafka bytes. Producer profiles are package
// profile's, built from the same exchanges and the findings (Finding.ID names
// a streamed finding across its reports).
//
// # Grouping, causes and proof
//
// Two attempts carry the same batch when they went to the same
// topic-partition and have the same bytes under the batch CRC (Match "bytes")
// or, for an idempotent producer, the same producer ID, epoch, first sequence
// and last offset delta (Match "sequence"), and were sent by the same client:
// on one connection or, with Options.Scope, on any connection of the same
// client IP and client.id, or of the same producer ID and epoch. Attempts
// to two clusters never group (decode names each exchange's cluster from
// the capture's Metadata and DescribeCluster responses or
// decode.Options.Clusters): a batch of another known cluster is filed
// apart, and a match by producer ID and sequence alone (other bytes) needs
// the same broker address or brokers known to be of one cluster, since
// every cluster hands out producer ID 0 (cluster.go). One request seen on
// two connections (a proxy's two legs, NAT, a capture given twice: the
// same correlation ID and batch bytes within Options.EchoWindow) is one
// request: the later copy is folded into the first, never an attempt,
// and counted in Stats.Echoes (echo.go). A retry
// whose bytes were rebuilt, or that an idempotent producer sent again
// under a new epoch or producer ID (which no broker deduplicates), is
// found by its records (KindRecordResend, Finding.ProducerChange), from
// the record prints of decode.Options.RecordPrints, at most
// Options.MaxRecords remembered. Each resend's Cause is judged by the answer
// to the attempt before it, if captured before the resend, and by how that
// attempt's connection ended (decode.EndSink: who sent its first FIN or
// RST; an answer the broker reset away at once is answer_lost). Fetch
// (decode.FetchSink) decides or confirms verdicts with the batches consumers
// fetched (Finding.Proof); InitProducerID and EndTxn (decode.TxnSink) give a
// batch its Transaction.
//
// # Ownership, bounds and bad input
//
// Produce reads the Exchange during the call and keeps none of it but the
// *decode.ConnInfo and client.id pointers and the topic string, which decode
// never changes after handing them over. A batch is remembered until
// Options.Window of packet time (never wall-clock time) has passed after its
// last attempt, at most Options.MaxBatches of them: the oldest is then
// decided early (Stats.Evicted). Decided findings are kept for Flush, so
// memory grows with the findings of a run, not its traffic; with Streaming
// they are not kept once reported (unless Options.KeepFindings). detect
// trusts decode's types but not their plausibility: a nil connection, missing
// partition responses, unknown error codes and out-of-order times are all
// taken as they come; nothing in an Exchange makes it panic. A Detector is
// not safe for concurrent use.
//
// # Files
//
//   - detector.go: Options, Detector, New; Produce, Advance and Flush.
//   - state.go: what a remembered batch and its attempts hold; owners and keys.
//   - digest.go: the batch indexes, keyed by a 64-bit digest of the key.
//   - build.go: a batch's Finding: its attempts in order and each resend's
//     cause.
//   - verdict.go: what each answer shows of the log, and the Verdict.
//   - finding.go: Finding, Attempt, Verdict, Cause, Scope, Match and Kind.
//   - span.go: Finding.Span, the time its evidence covers.
//   - stream.go: Streaming: deciding and reporting a finding as soon as it can
//     be.
//   - fetched.go: Proof from fetched batches; Fetch.
//   - txn.go: Transaction; InitProducerID and EndTxn; with Streaming, a
//     finding reported before its transaction ended is reported again once
//     an EndTxn or InitProducerId decides the outcome.
//   - end.go: how connections ended (decode.EndSink), for Attempt.End and
//     the causes it judges; AnswerLostWindow.
//   - echo.go: capture duplicates: one request seen on two connections;
//     Echo, Stats.Echoes and EchoLegs, the aliases of a proxy's legs.
//   - cluster.go: attempts to two clusters never group; Finding.Cluster.
//   - recordmatch.go: matching records sent again in batches not alike.
//   - recordfinding.go: the findings of records matched, reported or flushed.
//   - records.go: Record, RecordCopy and RecordHeader of a finding.
//   - stats.go: Stats, TopicStats and TopicIDString.
package detect
