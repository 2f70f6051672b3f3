// Package report writes findings and the run's summary for people and for
// scripts; its subpackages emit and metrics take them to Kafka and to
// Prometheus.
//
// # Place in the flow
//
// capture -> decode -> detect -> profile -> report. report takes
// detect.Finding values, the producer profiles of package profile
// (ProducerWriter), a Summary (plain counts pipeline gathers from every
// stage at the end) and, in a live run, Counters (the same stages' running
// totals), and gives:
//
//   - text: human tables (NewTable, rendered with tablewriter), one line per
//     finding for a live run (NewLines), the periodic status line
//     (StatusLine), or JSON Lines (NewJSON, one object per line, a public
//     contract described in the README; LineEncoder gives the same
//     objects one at a time, for package emit);
//   - Multi, to hand the same findings to several Writers, these and the
//     network sinks.
//
// The sinks that talk to a network are Writers of their own packages, so
// that the renderers here load no client library: report/emit publishes
// each finding as a Kafka record with franz-go's kgo, report/metrics
// counts them for Prometheus with client_golang. They use TopicName and
// Printable to name topics as the text does.
//
// It imports detect and profile only; it must never import capture,
// gopacket, decode, pipeline, franz-go's kgo or prometheus/client_golang,
// so it knows findings and profiles, never how they were found nor where
// they are sent.
//
// # Ownership and determinism
//
// A Writer reads what it is handed during the call and keeps nothing of it.
// Text output depends on its input only: times are printed in UTC from the
// capture, never from the clock, and nothing is printed in map order, so
// the same findings give the same bytes (the golden tests rely on it). The
// text writers are not safe for concurrent use.
//
// # Bad input
//
// Every value is printed as it is: an invalid address prints as "invalid
// AddrPort", a null client.id as null (JSON) or "(null)" (text). Names off
// the wire that are not printable UTF-8 are quoted (Printable). A Writer
// returns the first error of the io.Writer it writes to, wrapped.
//
// # Files
//
//   - writer.go: the Writer interface, Options (--verdict, --all, width),
//     Harmful, ParseVerdicts, the records counted twice, TopicName,
//     MillisText and the order of verdicts.
//   - table.go: NewTable and NewTableWith, the human tables of findings and
//     summary, the headline that opens them; Printable and ClientIDText.
//   - headline.go: Headline, the table's headline and counts of records
//     for writers of other formats (report/html).
//   - tables.go: the tablewriter tables kept and reset for each finding,
//     fitted to the width (OutputWidth).
//   - lines.go: NewLines, one line per finding for a live run.
//   - json.go: NewJSON and LineEncoder, the JSON Lines objects.
//   - proof.go: a finding's proof, fetched offsets and transaction in JSON.
//   - records.go: a finding's records, in a table and in JSON;
//     PrintableBytes and KindOf.
//   - producer.go: ProducerWriter, the producer profiles in each format.
//   - summary.go: Summary, Connection and TopicCount, the run's counts;
//     FailedInput and NothingToJudge, and the status the summary starts
//     with (input failed, nothing to judge, or the all-clear).
//   - echo.go: the summary's requests seen on two connections (EchoLeg).
//   - sasl.go: a connection's SASL user and mechanism in the table.
//   - counters.go: Counters, a live run's running totals.
//   - status.go: StatusLine, a live run's periodic status line.
//   - multi.go: Multi, one Writer handing everything to several.
//   - tls.go: TLSSummary, the TLS connections and hints in table and JSON.
//   - dropped.go: Dropped, what the bounds on untrusted input left out.
//   - progress.go: Progress, analyze's progress bar on a terminal.
//   - fleet.go: FleetSummary and AttemptsSummary, a correlation's hosts
//     and a capture's published attempts; the hosts of a finding.
package report
