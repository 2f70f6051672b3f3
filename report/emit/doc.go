// Package emit publishes findings and the run's summary to a Kafka topic,
// so that kdupcap on many hosts feeds one place.
//
// # Place in the flow
//
// capture -> decode -> detect -> report -> emit. It sits beside report's
// renderers: Kafka is a report.Writer (cmd/kdupcap hands it to report.Multi
// with the terminal's writer) that takes detect.Finding values and one
// report.Summary and gives one record each, produced with franz-go's kgo.
// A record's value is the JSON Lines object of report.NewJSON (through
// report.LineEncoder, so both give the same bytes); a finding's key is
// CLIENT|BROKER|TOPIC|PARTITION|CRC, the summary's key is empty. ParseURL
// reads the --emit target kafka://HOST:PORT[,HOST:PORT]/TOPIC, and
// Kafka.IsOwnConn names the sink's own connections so that a live capture
// leaves them out of the analysis.
//
// It imports report and detect; it must never import capture, decode
// (directly), pipeline, cmd/kdupcap or prometheus/client_golang, so it
// knows findings and where to send them, never how they were found.
//
// # Files
//
//   - kafka.go: Kafka, NewKafka, the asynchronous produce and its errors.
//   - url.go: ParseURL and Kafka's rules for a topic name.
//   - ownconn.go: the dialer that records the client's own connections.
//
// # Bounds
//
// The sink buffers at most DefaultBuffer records (unless told otherwise
// with kgo.MaxBufferedRecords) and fails a record that does not fit rather
// than stall the capture; every failed record is counted and its error
// returned by the next call or by Close, at most three distinct errors
// named, never dropped silently. It remembers its own connections while
// open and for two minutes after (TIME_WAIT), so the set is bounded by the
// connections of the last two minutes. Methods are safe for concurrent
// use; a Writer keeps nothing of what it is handed (the bytes produced are
// a copy). Errors keep the prefix "report: kafka:" or "report: emit URL"
// they had before the sink left package report, so the CLI says the same.
//
// # Secrets
//
// It dials plain TCP, or TLS with NewKafkaTLS, and authenticates with the
// SASL mechanism given as kgo.SASL; a URL with user info is refused
// (credentials come from the CLI's --kafka-* flags, never from the URL). Records carry what the findings hold:
// addresses, client IDs, topic names and, with --records or for a
// record-level finding, the keys, values and headers of captured records,
// so the emit topic needs the protection of the topics captured.
package emit
