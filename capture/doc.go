// Package capture is the first stage of kdupcap: it turns capture files into
// the ordered bytes of each TCP connection, per direction.
//
//	capture -> decode -> detect -> profile -> report -> pipeline -> cmd/kdupcap
//
// It takes pcap or pcapng files, optionally gzip or zstd compressed, and
// gives reassembled TCP bytes to a [Stream], an interface of standard types
// only, so that the Kafka decoder need not import this package. capture knows
// packets and TCP and never Kafka: it must never import decode, detect,
// profile, report, pipeline or anything that knows the Kafka protocol; which
// side of a connection is the client is the receiver's decision.
//
// # Reading and reassembly
//
// [Open] and [NewSource] recognise the input by its magic bytes, never by its
// name; each [Packet] carries the link type of its own pcapng interface.
// [Merge] reads several sources as one timeline, as mergecap does.
// [Assembler.Add] decodes Ethernet (with VLAN tags), Linux cooked, loopback
// and raw IP frames, and reassembles TCP: bytes in order and once, a
// segment the capture shows late (reordered) delivered in place within a
// reorder window, and a hole the capture cannot fill reported as a
// [Stream.Gap] before the bytes after it (once the window ran out when the
// peer acknowledged the lost bytes, else after IdleTimeout); a segment
// exactly where its stream goes on, with nothing queued, is handed on by
// the Assembler itself, without gopacket's reassembly, with the same calls.
// Time is packet time, never a clock read here; a live capture
// with no packet calls [Assembler.Tick]. [FlowHasher] and [FlushGate] shard a
// capture by connection over Assemblers. An [Evidence] keeps the recent
// packets of each connection for [Evidence.WritePcap]; a [SpanWriter] writes
// given connections' packets on a second read.
//
// # Ownership
//
// [Packet].Data belongs to the Source and is valid until the next call to
// Next (for a [Merged], until the next call to Merged.Next); Add does not
// keep it (an Evidence copies it). A pcap's records and a pcapng's
// Enhanced Packet Blocks are parsed in place in the Source's buffer, no
// packet copied; a Merged reads a compressed capture (and with
// MergeOptions.ReadAheadPlain one not compressed) ahead on a goroutine of
// its own, into chunks that become that buffer in turn, the decompressor
// writing into them. A zstd capture is decoded frame by frame, and each
// frame's checksum checked by whoever reads its bytes: on the parsing
// goroutine when it is read ahead, so that the decompressing one, the
// slower, only decompresses (zstdstream.go). The data handed to
// [Stream.Data] belongs to capture and is valid only during the call.
// Stream methods are called from within Add, Tick and Close, on the
// caller's goroutine; neither Source, Merged, Assembler nor Evidence is
// safe for concurrent use.
//
// # Bad input and bounds
//
// Every error of a Source is an [*InputError] naming the file and the byte
// offset reached; a [Merged] reports one source's error and goes on with the
// others. Bad packets are never errors: frames that do not decode, of an
// unsupported link type, or not TCP are counted in [Stats] and skipped; a
// frame cut by the snap length is used as far as it goes, the rest a gap,
// and counted with the snap length seen ([Stats].SnapLen). A packet whose
// captured length exceeds [MaxPacketBytes] is never read into memory: the
// Source skips it in chunks and returns it with no Data, and the Assembler
// counts it as Oversized. Nothing panics on bad input. An in-order segment
// allocates nothing; segments kept aside in a reorder window are bounded
// per connection and in total. The connections held at once are bounded
// by AssemblerOptions.MaxConnections: beyond it the quarter least recently
// active are closed early (Stats.Evicted), an [Evicter] told so.
// Evidence is bounded per connection and in total, oldest packets dropped
// first; [ErrEvidenceEvicted] says a range written may be partial.
//
// # Files
//
//   - source.go: Packet, Source, Open and NewSource; the format by magic bytes.
//   - pcap.go: a pcap's records, parsed in place in the Source's buffer.
//   - secrets.go: the TLS key logs of pcapng Decryption Secrets Blocks.
//   - pipe_linux.go, pipe_other.go: GrowPipe, a pipe's buffer grown for a
//     capture streamed in.
//   - pcapng.go: a pcapng's Enhanced Packet Blocks parsed in place, its
//     other blocks read by pcapgo one at a time.
//   - pcapahead.go: a capture's stream read into chunks on a goroutine of
//     its own, its records parsed in place there; Hold, AheadHolds and
//     AheadChunkBytes.
//   - bufpool.go: the chunks of sources that ended, kept for the next.
//   - errors.go: InputError, ErrNotCapture and ErrEmpty.
//   - oversized.go: MaxPacketBytes; packets over it skipped unread.
//   - merge.go: Merge, Merged, Layout, Span: several sources as one timeline.
//   - packet.go: the link, IP and TCP decoder with preallocated layers
//     (Ethernet, IP and TCP decoded without the parser's lookups).
//   - ipv4tcp.go: the decoder's own decode of Ethernet, IPv4 and TCP
//     headers, the commonest frame, TCP options left for reassembly.
//   - assembler.go: Assembler, AssemblerOptions, Stats; Add, Tick, Flush,
//     Close.
//   - conn.go: a connection's adapter to gopacket/reassembly; snap-length cuts.
//   - fastpath.go: in-order segments handed on without reassembly.
//   - conns.go: the bound on connections held; the least active evicted.
//   - hole.go: holes the capture will never fill, skipped on the peer's ack.
//   - reorder.go: reorder windows: segments shown late delivered in place.
//   - stream.go: the Stream, Evicter and Ender interfaces, NewStreamFunc.
//   - stats.go: Stats.Add, summing the Stats of sharded Assemblers.
//   - flow.go: FlowHasher and FlushGate, for sharding a capture.
//   - evidence.go: Evidence, EvidenceOptions, EvidenceStats, WritePcap(Conns).
//   - evidence_ring.go: a connection's packets as a byte ring on pooled slabs.
//   - pcapwriter.go: writing a pcap, or a pcapng for several link types.
//   - spans.go: ConnSpan, SpanWriter: given connections' packets, read again.
package capture
