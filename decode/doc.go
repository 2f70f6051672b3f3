// Package decode is the Kafka stage of kdupcap: it turns the reassembled
// bytes of TCP connections into produce exchanges.
//
// # Place in the flow
//
//	capture -> decode -> detect -> report
//
// decode takes, per TCP connection, the in-order bytes of each direction
// with their packet times, and gaps and close events; it gives a Sink one
// Exchange per ProduceRequest (its batches, and the broker's answer when the
// capture holds it) once the exchange is complete. A Decoder makes one Conn
// per connection (Decoder.NewStream); Conn has the method set of
// capture.Stream, which it satisfies without importing capture.
//
// decode knows Kafka bytes and never packets: it must never import capture,
// gopacket, detect, profile, report or pipeline.
//
// # What it decodes
//
// Size-prefixed frames; request headers v0-v2 (client.id); responses matched
// to their request by correlation ID within the connection and parsed with
// the request's version; Produce v0-v13 requests and responses through kmsg;
// the header of every record batch (RecordBatch v2) and legacy message sets
// (magic 0/1), never decompressed, each fingerprinted by a hash of the bytes
// its CRC covers; Metadata v10+ responses, to name the topics of Produce v13
// requests, which carry only topic IDs; ApiVersions v3+ requests, for the
// client's software name and version (ConnInfo). When the Sink also
// implements FetchSink, FetchResponses v0-v18 (consumers' and followers')
// are walked into the batches they hold with their log offsets (fetch.go);
// when it implements TxnSink, InitProducerId and EndTxn exchanges are handed
// over (txn.go). Other requests are skipped but kept pending so that
// responses stay matched. acks=0 requests complete at once; every other
// Exchange says how many produce requests of its connection were in flight
// once it was sent (Exchange.InFlight).
//
// Which side is the client is decided from the bytes: the side listening on
// a configured Kafka port is the broker; otherwise (Options.Sniff) the side
// whose bytes parse as a Kafka request frame, whole, is the client, and a
// connection that does not parse within a bounded number of bytes is given
// up (Data returns false). Which packet came first decides nothing.
//
// # Who owns the bytes
//
// The bytes handed to Conn.Data belong to the caller and are read only
// during the call. Whole frames are decoded in place; decode copies only the
// start of a frame whose end is in a later call, and the strings it keeps
// (client.id, topic names, error messages). Exchanges handed to the Sink
// belong to the Sink; decode never touches them again.
//
// # Bad input
//
// Nothing from the wire is trusted. A frame size that is negative or larger
// than Options.MaxFrameBytes is malformed and never allocated; the direction
// then loses its frame boundaries, as it does at a Gap and when the capture
// starts inside a frame. An unsynced direction drops bytes until the start
// of a later Data call (a TCP segment boundary) holds a plausible request
// header (client to broker) or a response whose correlation ID a pending
// request awaits (broker to client), and counts a resync. A frame whose
// header or body does not parse, or a batch that is cut short, is counted as
// malformed and skipped, and decoding goes on with the next frame; the first
// messages, each with the connection direction and byte position, are kept
// for Decoder.Errors (the position counts the bytes of that direction
// delivered to decode, plus the bytes Gap reported lost). Nothing is reported that the bytes do not show: a
// request whose bytes were lost is not guessed at, and a request whose
// answer may have been lost completes with NoResponse "bytes lost".
//
// A connection on a configured port is never given up; a sniffed one is,
// once 128 KiB or 32 segment starts of it did not parse as a request.
//
// What decode keeps is bounded whatever the wire carries: per connection
// the pending requests (Options.MaxPending), the start of one frame per
// direction (Options.MaxFrameBytes), a candidate frame start while unsynced
// (64 KiB, judged in work linear in its bytes), 16 distinct client.ids
// listed and shared; per Decoder the interned topic names and the topic IDs
// learned (2^18 each), and 20 error messages.
//
// # Records
//
// Records are read only with Options.Records > 0: the first N of each
// batch, into Batch.Records, each key, value and header value copied and
// cut to MaxRecordBytes. A compressed batch (gzip, snappy raw or xerial,
// lz4, zstd; legacy wrapper messages one level deep) is decompressed to at
// most Options.MaxDecompressedBytes per batch, beyond which nothing is
// allocated (Stats.DecompressTruncated); the zstd window is bounded too and
// no decompressor starts a goroutine. A batch that does not decompress or
// parse keeps its Batch, with the records read before the error, and is
// counted in Stats.RecordErrors, never in Malformed.
//
// A Decoder is not safe for concurrent use.
package decode
