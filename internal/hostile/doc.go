// Package hostile writes hostile packet captures, the ones issue 13 lists
// (and a few more), each with the Truth of what it holds, so that a test
// can pipe gigabytes of them into `kdupcap analyze -` and judge the run:
// bounded memory and time, no false finding, and the summary's counters of
// what the bounds dropped.
//
// # Place in the flow
//
// hostile sits outside the analysis flow (capture -> decode -> detect ->
// profile -> report -> pipeline -> cmd/kdupcap), as internal/gencap does:
// it only writes bytes that kdupcap reads, and its test runs the built
// command as a child process. It must never import capture, decode,
// detect, profile, report or pipeline: the captures are built from what the
// formats say (pcap, pcapng, Ethernet, Linux cooked v2, IPv4, TCP, the Kafka
// protocol through kmsg), never from what kdupcap's code expects.
//
// # What it takes and gives
//
// [Write] takes an io.Writer, a [Kind] and a scale, and writes one capture
// to the writer, streaming: a capture of 10 GB is made a segment at a time,
// and the generator holds no more than a few MiB at once (a batch's
// compressed bytes: a gzip batch of 16 MiB of records is about 3 MB; a
// level of a nested legacy message set under 3 MB). Scale 1 is the
// issue's size; counts and byte sizes are multiplied by
// scale, each at least 1. It returns a [Truth]: packets and bytes written,
// what was cut, corrupt, echoed or left unfinished, and the findings a
// correct analysis gives (every kind's re-sends are known; most kinds add
// one real re-send, a canary, so that a run that drops everything cannot
// pass). [Kinds] lists the kinds, [ParseKind] takes their names, and
// [Kind.About] says what each holds at scale 1.
//
// Frames are Ethernet (Linux cooked v2 for DockerNAT) with IPv4 and TCP
// headers built by hand into one reused buffer, with correct checksums for
// every packet an IPv4 length can describe (a larger one, as captures of
// segmentation offload show, has length 0). Kafka requests and responses
// are kmsg's encodings: ProduceRequest v2 to v9 with RecordBatch v2 (its
// header from kmsg.RecordBatch, CRC-32C Castagnoli computed, over a
// streamed pass of the records when they are large), Metadata v7 with a
// ClusterID. A request too large to hold is encoded by kmsg around a marker
// whose length fields are then set to those of the streamed records. What
// kmsg cannot encode (negative or oversized counts, bad lengths, forged
// CRCs, snappy and zstd streams of zeros, nested legacy message sets) is
// written field by field, and the tests check those encoders against kmsg
// and the codecs' decoders where the fields are valid.
//
// # Determinism
//
// One PCG source per kind, seeded by the kind, draws every choice, and time
// is simulated (from 2026-01-01T00:00:00Z): the same kind and scale give the
// same bytes on every run (TestWriteDeterministic), with the compression
// libraries of go.sum.
//
// # Bad input and errors
//
// The only input is the kind and the scale: an unknown kind or a scale
// outside (0, 1000] is refused before anything is written. The writer's
// first error stops the capture (a child that stops reading gives EPIPE);
// errors are wrapped with the kind, the scale and the byte position. The
// caller owns w and closes it.
//
// # Files
//
//   - kind.go: Kind, the table of kinds, Kinds, ParseKind, Write.
//   - truth.go: Truth and HugePacket.
//   - gen.go: the generator of one capture: producers, exchanges, canaries,
//     ordinary traffic.
//   - source.go: streamed byte sources (held, zeros, repeated, generated,
//     cut, chained) and the CRC-32C pass.
//   - capfile.go: pcap and pcapng framing, snap length cuts, streamed huge
//     packets.
//   - tcp.go: connections, Ethernet/SLL2, IPv4 and TCP headers, checksums,
//     handshakes, segmentation.
//   - kafka.go: requests and responses with kmsg; the spliced request.
//   - batch.go: RecordBatch v2 headers and records, streamed batches, the
//     CRC-32C forge, legacy messages.
//   - codec.go: gzip, and snappy (raw, xerial) and zstd streams of zeros.
//   - kinds_memory.go: the memory and CPU kinds (rows a to m).
//   - kinds_wire.go: forged and shared CRCs, snap length cuts (n to p), and
//     the package's own wire kinds.
//   - kinds_copies.go: one request seen twice, clusters, interrupted runs
//     (q to v).
//   - generate_test.go: the generator's own tests.
//   - hostile_test.go: TestHostile, kdupcap built once and run as a child
//     per kind and flag set (Linux: peak RSS from rusage).
//   - cmd/hostilecap: writes one kind to a file or standard output.
package hostile
