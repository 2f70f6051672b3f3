// Package metrics exports a live run as Prometheus metrics, all named
// kdupcap_*, and serves them to a scrape.
//
// # Place in the flow
//
// capture -> decode -> detect -> report -> metrics. It sits beside
// report's renderers: Exporter is a report.Writer that counts the
// detect.Finding values it is handed (by verdict and by topic, resends and
// extra record copies; the summary adds nothing), Update turns the stages'
// running totals (report.Counters) into counters, ObserveProduceLatency
// feeds a produce latency histogram, and Handler serves it all in the
// Prometheus text format, with prometheus/client_golang.
//
// It imports report and detect; it must never import capture, decode
// (directly), pipeline, cmd/kdupcap or franz-go's kgo, so it knows
// findings and counts, never how they were found.
//
// # Files
//
//   - metrics.go: Exporter, New, Options, the counters, the histogram and
//     the topic label bound.
//
// # Bounds
//
// The topic label takes at most Options.MaxTopics names (100 by default);
// later topics count as OtherTopic, an empty name as UnknownTopic. Labels
// are printed as report prints names (report.Printable: a name off the
// wire that is not printable UTF-8 is quoted), so a scrape stays valid.
// Counters that go down (a stage that started again) never make a
// Prometheus counter go down. Methods are safe for concurrent use, so a
// scrape may run while the pipeline writes. Errors keep the prefix
// "report:" they had before the sink left package report.
//
// # Secrets
//
// The page shows topic names and counts, no address, client ID or record;
// Handler has no authentication, so the CLI's --metrics address decides
// who may read it.
package metrics
