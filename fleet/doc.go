// Package fleet carries produce attempts between hosts through Kafka, so
// that the re-sends of one producer across broker hosts are seen together:
// each host's capture publishes its attempts to a topic, and a correlation
// reads them back from every host, merged by capture time.
//
// # Place in the flow
//
//	capture -> decode -> fleet -> (Kafka) -> fleet -> detect -> ...
//
// fleet sits between decode and detect. On a capture host, a Publisher
// takes every decode.Exchange and decode.ConnEnd, and the EndTxn and
// InitProducerId exchanges of transactional producers (as a decode.Sink's
// and decode.TxnSink's calls, before detect sees them), encodes each as one
// record (schema.go: a documented, versioned binary schema) and produces it
// with franz-go's kgo, keyed by producer identity (client IP without port,
// and client.id: Key) so that one producer's attempts from every host land
// in one partition. The transaction records go under the same key, from
// whichever host saw the producer's transaction coordinator, so that a
// correlation knows, as analyze does, whether a re-sent batch's
// transaction was aborted (its copies then invisible to read_committed
// consumers). On the correlating side, a Consumer is a member of a kgo
// consumer group: each instance owns some partitions, decodes their
// records back into decode's types (Decoder, which numbers the connections
// of all hosts apart, remembering each one's host), and merges them by
// capture time with bounded lateness (Merger), for detect.
//
// Fetch responses are not published (schema.go says why): a correlation's
// verdicts rest on the produce answers alone, which is conservative: the
// fetched copies never take a duplicated verdict back, so a correlation
// never claims a duplicate that analyze with the fetches would not.
//
// It imports decode, internal/fifo and franz-go's kgo; it must never
// import detect, profile, report, pipeline, capture, gopacket or
// cmd/kdupcap, at any depth: pipeline wires it, and findings are not its
// business.
//
// # Who owns the bytes
//
// Exchange, ConnEnd, EndTxn and InitProducerID read what they are handed
// during the call only; the record bytes handed to kgo are copies. A
// batch whose record prints are published is given a copy of them
// (decode.Batch.SetRecordPrints), so that detect, after, reads the same.
// Decoded Events are the caller's; their ConnInfo is shared by every event
// of the connection.
//
// # Bounds and bad input
//
// Nothing read back is trusted: Decode refuses counts larger than the
// bytes left, values out of range, other versions (ErrVersion) and kinds
// it does not know (ErrKind), and a record that fails is counted and
// skipped. The Publisher never blocks
// the capture: kgo's buffer is bounded (MaxBuffered records and
// MaxBufferedBytes), a record that does not fit is dropped and counted,
// and so is one the cluster never acknowledged. The Encoder remembers
// maxEncoderConns connections and maxHot partitions, the Decoder MaxConns
// connections, the Merger MaxHeld records and maxStreams watermarks.
//
// # Files
//
//   - doc.go: this.
//   - wire.go: the schema's primitives, and a sticky-error reader.
//   - schema.go: the attempt record, version 1: AppendAttempt,
//     AppendConnEnd, Decode, Record, Header, Kind, Version, ErrKind.
//   - txn.go: the transaction records: AppendEndTxn,
//     AppendInitProducerID, Encoder.EndTxn and InitProducerID.
//   - hot.go: which batches carry their record prints: PrintMode,
//     PauseGap, HotBudget.
//   - encoder.go: Encoder, Key: a capture's events as records, in order.
//   - conns.go: Decoder and Event: records back to decode's types, the
//     connections of all hosts numbered apart, HostOf.
//   - merge.go: Merger and HostStats: the hosts merged by capture time,
//     bounded lateness, per-host watermarks.
//   - client.go: ClientOptions (TLS, SASL) and the dialer that knows the
//     client's own connections.
//   - publisher.go: Publisher: the background, bounded producer.
//   - consumer.go: Consumer: the group member, its merge and its commits
//     (only of records older than the detection window).
package fleet
