// Package decode is the Kafka stage of kdupcap: it turns the reassembled
// bytes of TCP connections into produce exchanges.
//
// # Place in the flow
//
//	capture -> decode -> detect -> profile -> report -> pipeline -> cmd/kdupcap
//
// decode takes, per TCP connection, the in-order bytes of each direction with
// their packet times, gaps and close; it gives a Sink one Exchange per
// ProduceRequest (its batches, and the broker's answer when captured) once
// complete. A Decoder makes one Conn per connection (Decoder.NewStream),
// which satisfies capture.Stream without importing capture; Decoders of one
// capture share connection numbers and topic names through a Shared. decode
// knows Kafka bytes and never packets: it must never import capture,
// gopacket, detect, profile, report or pipeline.
//
// # What it decodes
//
// Responses are matched to requests by correlation ID. Produce v0-v13 is read
// with kmsg, each batch's CRC checked and every byte it covers fingerprinted
// (a batch whose CRC is wrong is Corrupt, counted, never matched);
// Metadata names Produce v13's topic IDs, ApiVersions the client's software;
// Fetch is read for a FetchSink, InitProducerId and EndTxn for a TxnSink;
// SaslHandshake v0-v1 and SaslAuthenticate v0-v2 for the mechanism and the
// authenticated user (ConnInfo.SASLMechanism, SASLUser), re-authentication
// (KIP-368) included; the raw int32-length-prefixed tokens that follow a
// SaslHandshake v0 with no Kafka header are skipped as authentication,
// never taken as malformed frames. No password, SCRAM nonce, proof or salt,
// or bearer token is kept, copied or put in a message; decode's own copy of
// a token's frame is zeroed once read, and the time of each authentication
// is listed (ConnSummary.SASLSpans) for evidence writers to leave out. Other requests are only kept pending. The side on a configured Kafka port
// is the broker; otherwise (Options.Sniff) the side whose bytes parse as a
// whole request frame is the client. Which packet came first decides nothing.
//
// # Who owns the bytes
//
// The bytes handed to Conn.Data belong to the caller and are read only during
// the call; decode copies only a frame start whose end comes later, and the
// strings it keeps. A frame that spans segments is copied once, into an
// array reused from frame to frame; while it comes, the CRCs and
// fingerprints of its record batches are summed over the bytes just copied
// (scan.go); a large produce request's array is then lent to its exchange
// for the batch bytes kept for record prints, until the answer came
// (lend.go), rather than copying them out again. Decoder.Takes and Decoder.Sure
// say from the addresses alone which connections NewStream takes and which
// take every byte from the start (Conn.Settled: only a sniffed connection
// not yet known to be Kafka may refuse its bytes), for a caller that
// decodes on another goroutine than the one reassembling. Exchanges handed to the Sink belong to the Sink; the
// batch bytes decode keeps for Batch.RecordPrints are valid during the Sink's
// call. A Decoder is not safe for concurrent use.
//
// # Bad input and bounds
//
// Nothing from the wire is trusted. A frame size that is negative or over
// Options.MaxFrameBytes is malformed and never allocated; a frame over
// Options.MaxHeldFrameBytes is valid but never held: its header keeps its
// response matched, the rest is passed over as it arrives (counted in
// Stats.OversizedFrames). After a malformed size the direction
// resyncs, as after a Gap, at a later segment start holding a plausible
// request header or an awaited response. A frame that does not parse is
// counted as malformed and skipped, its message and byte position kept for
// Decoder.Errors (the first MaxErrors). A request whose answer may have been
// lost completes with NoResponseBytesLost: nothing is guessed. A sniffed
// connection is given up after 128 KiB that do not parse. Kept state is
// bounded: Options.MaxPending requests and one frame start per direction per
// connection, Options.MaxBufferedFrameBytes of frame starts over all
// connections (beyond it a connection's partial frame is dropped and its
// direction resyncs, counted; the arrays of large frames kept for reuse
// hold at most half as much again), 2^16 topic names and 2^16 topic IDs per run;
// records (Options.Records) are cut to MaxRecordBytes, and decompression
// stops at Options.MaxDecompressedBytes per batch, for every codec, and at
// Options.MaxDecompressedTotal per Decoder, after which nothing more is
// decompressed (counted).
//
// # Files
//
//   - decoder.go: Options, Stats, ConnSummary, Decoder; New and NewStream.
//   - conn.go: Conn, the capture.Stream of one connection: sides, sync,
//     framing.
//   - buffer.go: the partial frames of all connections, bounded together;
//     the arrays of large frames, reused.
//   - scan.go: the batch CRCs and fingerprints of a request that spans
//     segments, summed as its bytes come.
//   - lend.go: a large request frame's array lent to its exchange for the
//     batch bytes record prints keep.
//   - oversized.go: frames over MaxHeldFrameBytes, passed over unheld.
//   - frame.go: request headers and the probes that find a frame start.
//   - message.go: the API keys decode reads; requests and responses dispatched.
//   - pending.go: the requests awaiting a response, bounded by MaxPending.
//   - exchange.go: ConnInfo, Exchange, NoResponse, Batch, PartitionResponse,
//     Sink.
//   - end.go: ConnEnd and EndSink: who ended each connection and how
//     (capture's Ender).
//   - produce.go: Produce v0-v13 requests and responses.
//   - plausible.go: produce requests and responses walked before kmsg
//     reads them, so that no array count amplifies what it allocates.
//   - batch.go: record batch and message set headers; their CRCs and
//     fingerprints.
//   - records.go: Record and RecordHeader, the first records of a batch read.
//   - prints.go: record prints made on demand: Printer, Batch.RecordPrints.
//   - codec.go: gzip, snappy, lz4 and zstd, each capped in what it allocates.
//   - lz4.go: LZ4 frames read block by block into the capped output.
//   - metadata.go: Metadata responses naming the topics of Produce v13.
//   - cluster.go: the cluster of each broker address, from Metadata v2+,
//     DescribeCluster and Options.Clusters (Exchange.Cluster).
//   - apiversions.go: ApiVersions requests, for the client's software.
//   - fetch.go: Fetch v0-v18, FetchSink and the batches a response holds.
//   - txn.go: InitProducerId and EndTxn, TxnSink.
//   - sasl.go: SaslHandshake, SaslAuthenticate and the raw tokens of
//     SaslHandshake v0: when they end, the outcome, the user.
//   - shared.go: Shared, Event and SharedSink: what a capture's Decoders share.
//   - stats.go: Stats.Add, summing the Stats of Decoders sharing a capture.
//   - names.go: ErrorName, CodecName and AcksText, for the stages after decode.
package decode
