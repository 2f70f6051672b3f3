// Package gencap writes synthetic Kafka produce captures for kdupcap's
// benchmarks, together with a Manifest that is the bench's ground truth.
//
// # Place in the flow
//
// gencap sits outside the analysis flow (capture -> decode -> detect ->
// report): it only writes bytes that kdupcap then reads. It takes a Config
// and an io.Writer and gives a pcap file and a *Manifest. It must never
// import capture, decode, detect or report, and it holds no detection
// logic: `make bench` runs kdupcap on the file and compares kdupcap's
// findings with the Manifest. Generate owns every byte it builds; the
// caller owns w and closes it. Bad input is a bad Config, refused with an
// error before anything is written.
//
// # What a capture holds
//
//   - A classic pcap (microsecond timestamps, snap length 262144, link type
//     Ethernet). MTU 65535 imitates loopback (zero MACs, clients
//     127.0.0.x, brokers 127.0.1.x, segments of up to 65495 bytes);
//     MTU 1500 imitates Ethernet (10.0.0.x, 10.0.1.x, 1460-byte
//     segments). IPv4 and TCP checksums are correct.
//   - Config.Conns client connections at a time to Config.Brokers brokers,
//     all on port 9092, each opened with SYN, SYN-ACK, ACK, then an
//     ApiVersions v3 exchange (a non-produce API to skip), then produce
//     requests, and closed with FIN/FIN/ACK. Connections are stepped in
//     time order, so their packets interleave in the file. Every request
//     and response is acknowledged by a pure ACK from the other side.
//   - Each producer has fixed settings: ProduceRequest version 3, 7, 9
//     (flexible) or 11; acks all (idempotent or not), 1 or 0 (acks=0
//     requests get no response); a request timeout; a client ID; a codec.
//     Topics go by name ("orders", "payments", "clicks", "audit-log"), and
//     each partition has one leader, the broker its producers talk to.
//   - Requests carry 1 to 3 partitions, each a RecordBatch v2 built with
//     kmsg.RecordBatch and kmsg.Record: 1 to 50 records of 100 to 1000
//     byte JSON-like values drawn from Seed, correct lengths and CRC-32C.
//     Records are really compressed with the codec in the attributes:
//     gzip (klauspost/compress/gzip), snappy (raw block, as franz-go
//     writes it), lz4 (pierrec/lz4 frame) or zstd (klauspost, never below
//     v7), or left uncompressed. Idempotent producers (producer IDs from 0
//     up, epoch 0) number their batches with increasing sequences per
//     partition; the others send producer ID -1.
//   - Responses answer every partition with its base offset in a log kept
//     per partition, so offsets never repeat.
//
// # Known resends (the ground truth)
//
// After every Config.ResendEvery-th batch, the next exchange of an
// acks=all connection sends one batch twice, the same bytes under a new
// correlation ID, with answers written to give each verdict in turn:
//
//   - duplicated (non-idempotent): the first attempt is answered
//     REQUEST_TIMED_OUT (7) at offset X after the request's timeout, the
//     retry, after a 100 ms backoff, with no error at Y != X.
//   - deduplicated (idempotent): the same first answer; the retry with no
//     error at X.
//   - single: the first is answered NOT_LEADER_OR_FOLLOWER (6) at -1, the
//     retry with no error.
//   - unconfirmed: the retry gets no response and the client closes the
//     connection after its timeout, then reconnects from a new port. The
//     first attempt is alternately answered REQUEST_TIMED_OUT at X (as in
//     the seed capture) or not at all (a client-side timeout).
//
// Resends still owed when the file reaches its size are not made, so count
// the Manifest's Resends, not TargetBytes/ResendEvery. Every such resend is
// a Resend in the Manifest, with the verdict and the
// offsets kdupcap should report; nothing else in the file is sent twice at
// the Kafka level. Every Config.RetransmitEvery-th data segment is written
// twice (same TCP sequence and payload, new IP ID): a TCP retransmission,
// which must never become a finding.
//
// # Determinism
//
// The same Config gives the same file byte for byte: one PCG source seeded
// by Config.Seed draws every choice, time is simulated (from
// 2026-01-01T00:00:00Z, strictly increasing per packet), ties are broken
// by scheduling order, and the codecs run single-threaded. A different
// version of a compression library may still change compressed bytes.
package gencap
