// Package capture is the first stage of kdupcap: it turns capture files into
// the ordered bytes of each TCP connection, per direction.
//
//	capture -> decode -> detect -> report
//
// It takes files (pcap or pcapng, optionally gzip or zstd compressed, or
// standard input) and gives reassembled TCP byte streams to a [Stream], an
// interface made of standard types only, so that the Kafka decoder can
// receive them without importing this package. capture knows packets and TCP
// and never Kafka: it must never import decode, detect, profile, report,
// pipeline or anything that knows the Kafka protocol; which side of a connection is the client is
// the receiver's decision.
//
// # Reading
//
// [Open] or [NewSource] recognise the input by its magic bytes, never by its
// name: gzip and zstd are removed transparently, then pcap (microsecond or
// nanosecond timestamps, either byte order) is read with pcapgo.Reader and
// pcapng with pcapgo.NgReader, which is told to keep packets of every
// interface: each [Packet] carries the link type of its own interface.
// [Source.Next] returns io.EOF at the clean end of the input.
//
// [Merge] reads several sources as one timeline: a streaming k-way merge by
// packet timestamp (as mergecap does), stable in source order for equal
// timestamps, with a per-source clock skew added to every timestamp. Files
// taken at the same time on several hosts are interleaved; a capture rotated
// into several files comes out as if read one file after the other.
// [Merged.Layout] says which of the two a set was.
//
// # Decoding and reassembly
//
// [Assembler.Add] decodes Ethernet (with 802.1Q and QinQ tags), Linux cooked
// SLL and SLL2, BSD loopback (NULL and LOOP) and raw IP frames, IPv4 and IPv6,
// and TCP, with one gopacket.DecodingLayerParser per first layer and
// preallocated layers. TCP is reassembled with gopacket/reassembly:
// connections seen from their middle are taken as they come, out-of-order
// segments are put back in order, data already delivered (a TCP
// retransmission, an overlap) is never delivered twice, and a hole the
// capture cannot fill is reported with [Stream.Gap] before the data after it.
// A hole the other side has acknowledged (the peer got bytes the capture
// lost) is skipped as soon as the acknowledgment is seen, before that
// acknowledging segment is delivered, so that a request after the hole still
// comes before the response answering it; other holes wait for IdleTimeout.
// An RST does not drop data waiting behind a hole of the other direction.
// A new SYN on a 4-tuple whose connection ended starts a new connection.
//
// Time is packet time, never a clock read here: once per
// [AssemblerOptions].FlushInterval of packet time, data that waited
// IdleTimeout for a hole is delivered after a Gap and connections idle for
// IdleTimeout are closed (counted in [Stats].IdleClosed). A live capture
// with no packet for a while calls [Assembler.Tick] with the wall clock to
// do the same work; it costs nothing until FlushInterval has passed.
// [Assembler.Close], at the end of the input, delivers what is left and
// closes every Stream. An RST closes both directions.
//
// # Sharding
//
// A capture can be split by connection across several Assemblers, one per
// goroutine: [FlowHasher] gives every frame of a TCP connection (both
// directions) the same hash, reading the headers in place, and with
// [AssemblerOptions].ExternalFlush the caller runs one [FlushGate] over
// all packets and calls [Assembler.Flush] on every Assembler where it is
// due, so that each connection is flushed at the same packet as with one
// Assembler.
//
// # Evidence
//
// With [AssemblerOptions].Evidence set, an [Evidence] keeps a copy of the
// recent packets of every TCP connection not ignored (NewStreamFunc returned
// nil, or Stream.Data returned false: its packets are dropped), taken before
// the packet's bytes reach the Stream, so that [Evidence.WritePcap] can
// write the packets behind a finding to a pcap that this package (and
// Wireshark) reads back. Bounds: PerConnBytes per connection and TotalBytes
// over all (oldest packets dropped first, counted), and Retain after a
// closed connection's last packet. Packets are copied into pooled slabs: no
// allocation per packet in the steady state. A nil Evidence costs nothing.
// A capture file read a second time needs no buffer: a [SpanWriter] writes
// the packets of given connections within given times (analyze's
// --write-dups).
//
// # Ownership
//
// [Packet].Data belongs to the Source and is valid until the next call to
// Next (for a [Merged], until the next call to Merged.Next); Add does not
// keep it (an Evidence copies it). The data handed to [Stream.Data] belongs
// to capture and is valid only during the call. Stream methods are called
// from within Add, Tick and Close, on the caller's goroutine; neither Source,
// Merged, Assembler nor Evidence is safe for concurrent use.
//
// # Bad input
//
// Every error of a Source is an [*InputError] naming the file and the byte
// offset of the capture stream reached (decompressed bytes for gzip and
// zstd): an empty file, a file that is not a capture, a truncated or corrupt
// one. Packets read before the error stay valid results; a [Merged] returns
// one source's error and goes on with the others. Bad packets are never
// errors: frames that do not decode, of an unsupported link type, or that are
// not TCP are counted in [Stats] and skipped; a frame cut by the snap length
// is used as far as it goes and the missing bytes are reported as a gap,
// before the bytes of the next segment, even when nothing of it was captured.
// Nothing in this package panics on bad input. [Evidence.WritePcap] says
// with [ErrEvidenceEvicted] when packets of the range asked for may have
// been dropped; what is held is still written.
//
// # Allocations
//
// In the steady state, adding an in-order segment allocates nothing, whether
// its connection is delivered or ignored; out-of-order segments are copied
// into pooled pages until their hole is filled, and their starts are noted
// (up to 256 per direction) so that the data after a hole is handed over
// one Data call per captured segment, where a receiver can resync.
package capture
