// Package profile says what a capture shows of each Kafka producer: the
// settings its requests carry, its produce latency per broker, what its
// re-sends did to the log, and a diagnosis in plain words.
//
// # Place in the flow
//
// capture -> decode -> detect -> report, with profile beside detect: a
// Profiler takes the same complete produce exchanges as the Detector
// (decode.Exchange, handed to Profiler.Produce, which satisfies decode.Sink)
// and every report of the findings the Detector gives (detect.Finding,
// handed to Profiler.Finding), and gives one Producer per client IP,
// client.id and producer ID (Profiler.Producers), which report renders. A
// live Detector reports a finding again when it is revised: the report with
// the same Finding.ID replaces the earlier ones while it may still come
// (Options.Revisable, the Detector's Window plus Settle), after which the
// finding is tallied for good.
//
// It imports decode and detect only, for their types and the names of wire
// values (decode.ErrorName, CodecName, AcksText); it must never import
// capture or gopacket (packets), report (output), pipeline or cmd, and it
// never sees Kafka bytes.
//
// # Files
//
//   - producer.go: Producer, BrokerLatency, CauseCount, ErrorCount, Options,
//     ProducerKey and KeyOf, and the Profiler: Produce, which reads the
//     settings, counts and latency off each exchange, and Producers, which
//     builds the profiles.
//   - tally.go: Finding, which tallies each producer's re-sends by cause
//     (with the times of the connection ends they followed), verdict, most
//     copies and changes of epoch or producer ID, keeping each revisable
//     finding's share apart until no later report of it can come, and
//     notes the errored sends findings show sent again (for Unretried).
//   - diagnosis.go: Diagnose and SoftwareText.
//   - clients.go: the client table: each client's software name and the
//     names of the settings a diagnosis advises on (librdkafka and its
//     confluent-kafka-go, -python and -dotnet wrappers, the Java client,
//     franz-go, sarama, kafka-go, kafkajs, kafka-python,
//     @platformatic/kafka), and the librdkafka version a wrapper carries.
//   - infer.go: the guess of the client of a producer that sent no
//     software name, from its default client.id and the ApiVersions and
//     Produce versions it sent (Producer.SoftwareGuess), and GuessText.
//   - fix.go: Fix, the one setting that would have kept a producer's
//     records out of the log twice, for the headline.
//   - sketch.go: Sketch, the fixed-size logarithmic latency histogram.
//   - timeline.go: Timeline, latency per broker over capture time in a
//     fixed number of buckets that merge in pairs as the capture grows.
//
// # Ownership and bounds
//
// Produce and Finding read what they are handed during the call only; the
// client.id and transactional.ids they keep are copies or immutable
// strings. Producers changes nothing (a second call returns the same) and
// the slices and maps it returns are the caller's. Times are packet times,
// never wall-clock time. At most Options.MaxProducers producers are
// profiled (DefaultMaxProducers); the exchanges of any other are only
// counted (Profiler.Omitted). A profile is of fixed size: at most 8
// distinct values of each setting and 64 brokers, each with two Sketches of
// about 2 KiB. At most Options.MaxPending findings are kept revisable
// (DefaultMaxPending); beyond that the oldest reported are tallied early.
//
// # Bad input
//
// A nil connection (no address, no latency), unanswered requests, unknown
// error codes, negative latencies (counted as 0) and findings of producers
// never profiled are taken as they come; nothing in an Exchange or a
// Finding makes it panic. A finding of records the application produced
// twice (detect.KindRecordDuplicate) is no re-send and is not tallied. A
// Profiler is not safe for concurrent use.
package profile
