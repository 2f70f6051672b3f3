// Package report writes findings and the run's summary for people, for
// scripts, for Prometheus and for Kafka.
//
// # Place in the flow
//
// capture -> decode -> detect -> report. report takes detect.Finding values,
// the producer profiles of package profile (ProducerWriter), a Summary (plain
// counts the CLI gathers from every stage at the end) and, in a live run,
// Counters (the same stages' running totals), and gives:
//
//   - text: human tables (NewTable, rendered with tablewriter), one line per
//     finding for a live run (NewLines), the periodic status line
//     (StatusLine), or JSON Lines (NewJSON, one object per line, a public
//     contract described in the README);
//   - Prometheus metrics (NewMetrics, with prometheus/client_golang): a
//     Writer that counts findings, Update for the stages' totals, a produce
//     latency histogram, and the HTTP handler to scrape;
//   - Kafka records (NewKafka, with franz-go's kgo): each finding and the
//     summary as one record whose value is its JSON Lines object, so many
//     hosts feed one topic. ParseEmitURL reads the kafka://HOST:PORT/TOPIC
//     target, and IsOwnConn names the sink's own connections so that the
//     capture can leave them out;
//   - Multi, to hand the same findings to several of these.
//
// It imports detect and profile only; it must never import capture,
// gopacket, decode or pipeline, so it knows findings and profiles, never how
// they were found.
//
// # Ownership and determinism
//
// A Writer reads what it is handed during the call and keeps nothing of it
// (the Kafka sink copies the bytes it produces). Text output depends on its
// input only: times are printed in UTC from the capture, never from the
// clock, and nothing is printed in map order, so the same findings give the
// same bytes (the golden tests rely on it). Metrics and the Kafka sink are
// safe for concurrent use; the text writers are not.
//
// # Bounds
//
// The topic label of the metrics takes at most MetricsOptions.MaxTopics
// names (100 by default); later topics count as OtherTopic. The Kafka sink
// buffers at most DefaultKafkaBuffer records (unless told otherwise) and
// fails a record that does not fit rather than stall the capture; it
// remembers its own connections while open and for two minutes after.
//
// # Bad input
//
// Every value is printed as it is: an invalid address prints as "invalid
// AddrPort", a null client.id as null (JSON) or "(null)" (text). Names off
// the wire that are not printable UTF-8 are quoted in text and in metric
// labels. A Writer returns the first error of the io.Writer it writes to,
// wrapped; the Kafka sink returns every failed record's error (counted, the
// distinct errors named) from its next call or from Close, never dropping
// one silently. Counters that go down (a stage that started again) never
// make a Prometheus counter go down.
package report
