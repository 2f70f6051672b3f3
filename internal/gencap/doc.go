// Package gencap writes synthetic Kafka produce captures for kdupcap's
// benchmarks, together with a Manifest that is the bench's ground truth.
//
// # Place in the flow
//
// gencap sits outside the analysis flow (capture -> decode -> detect ->
// profile -> report): it only writes bytes that kdupcap then reads. It takes
// a Config and an io.Writer (GenerateKeyLog: a second one for the TLS key
// log) and gives a capture file and a *Manifest. It must
// never import capture, decode, detect, profile, report or pipeline, and it
// holds no detection logic: `make bench` runs kdupcap on the file and
// compares kdupcap's findings with the Manifest (Manifest.Check). Generate
// owns every byte it builds; the caller owns w and closes it. Bad input is a
// bad Config, refused with an error before anything is written; the file
// grows to about Config.TargetBytes.
//
// # What a capture holds
//
// A classic pcap (a pcapng with Config.Secrets) of Ethernet frames
// imitating loopback (MTU 65535) or Ethernet (MTU 1500), with correct IPv4
// and TCP checksums. Config.Conns
// client connections at a time to Config.Brokers brokers on port 9092, each
// opened with a handshake and an ApiVersions exchange (a non-produce API to
// skip), then produce requests, closed with FIN; their packets interleave in
// time order and every request and response is acknowledged. Each producer
// has fixed settings (ProduceRequest v3, 7, 9 or 11; acks all, 1 or 0; a
// timeout, a client ID, a codec); its batches are RecordBatch v2 built with
// kmsg, really compressed, with idempotent producers numbering them by
// sequence. Offsets come from a log per partition and never repeat.
// Config.AcksAll leaves out the acks=1 and acks=0 producers, and
// Config.MaxRecords and Config.MaxValueBytes make batches smaller (1..50
// records of 100..1000 bytes by default): with ResendEvery 1 too, nearly
// every exchange is a resend, some 1.3 KB of capture each (cmd/kdupcap's
// 100000-finding HTML report test).
//
// # Known resends (the ground truth)
//
// After every Config.ResendEvery-th batch, the next exchange of an acks=all
// connection sends one batch twice, the same bytes under a new correlation
// ID, answered so as to give the verdicts duplicated or deduplicated, single
// and unconfirmed in turn (resend.go says how). Each is a Resend in the
// Manifest with the verdict and the offsets kdupcap should report; resends
// still owed at the end are not made, so count the Manifest's Resends.
// Nothing else is sent twice at the Kafka level. Every
// Config.RetransmitEvery-th data segment is written twice at the TCP level,
// which must never become a finding.
//
// # TLS
//
// With Config.TLS every connection is TLS 1.3, made by the real crypto/tls
// in process (tls.go): after the TCP handshake its TLS handshake flights in
// their directions and order, then the same Kafka frames as records of its
// tls.Conns (TLS_AES_128_GCM_SHA256 where the CPU has AES instructions),
// each side's close_notify before the FINs. GenerateKeyLog writes the NSS
// key log (FILE.keys beside the capture, KeyLogPath) that `kdupcap analyze
// --tls-keylog FILE.keys FILE` decrypts with; with Config.Secrets the file
// is a pcapng carrying each connection's key log in a Decryption Secrets
// Block before its SYN, and decrypts with no key log file. The manifest is
// the plaintext one's in meaning: the same resends with the same verdicts
// are found once decrypted, none without keys.
//
// # Determinism
//
// The same Config gives the same file byte for byte: one PCG source seeded by
// Config.Seed draws every choice, time is simulated (from
// 2026-01-01T00:00:00Z, strictly increasing per packet), ties are broken by
// scheduling order, and the codecs run single-threaded. A different version
// of a compression library may still change compressed bytes. A TLS
// capture is the exception: crypto/tls takes its randoms, key shares and
// signatures from crypto/rand, so its ciphertext and key log differ on
// every run. Its manifest does not: every handshake message and record has
// a fixed length (the one ECDSA signature is drawn until it is 72 bytes),
// so the packets, the file's size and every finding are the same on every
// run of the same Config.
//
// # Files
//
//   - config.go: Config, its defaults and checks; DefaultConfig.
//   - generate.go: Generate, the generator and its packet loop.
//   - topology.go: topics, partitions, producers and their connections.
//   - steps.go: the timing model; opening, sending on and closing a connection.
//   - resend.go: the known resends and the answers that give each verdict.
//   - frame.go: Produce and ApiVersions requests and responses; error codes.
//   - batch.go: RecordBatch v2 building, shape limits and values.
//   - codec.go: Codec and the single-threaded compressors.
//   - tcp.go: TCP segments and their serialization into Ethernet frames.
//   - tls.go: the TLS mode: crypto/tls over an in-memory pipe, the
//     brokers' built-in certificate, the key log; KeyLogPath.
//   - capfile.go: the file formats: pcap (pcapgo) and pcapng with
//     Decryption Secrets Blocks.
//   - schedule.go: the heaps ordering segments and connections in time.
//   - size.go: ParseSize, the sizes the bench commands take (100MB, 1GB).
//   - manifest.go: Manifest, Resend, Attempt, Found; its JSON (WriteFile
//     writes it to a file atomically) and Check;
//     the Port and Source of a capture gencap did not make (a capture of
//     real clients, internal/kafkatest/cmd/realcap).
//   - tls_pipeline_test.go: an external test that runs kdupcap's pipeline
//     on TLS captures, decrypted and not (the package never imports it).
package gencap
