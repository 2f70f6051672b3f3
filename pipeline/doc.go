// Package pipeline runs kdupcap: it wires the stages into the runs the
// commands make, and owns what lies between them.
//
// # Place in the flow
//
//	capture -> decode -> detect -> profile -> report
//	                  pipeline               <- cmd/kdupcap
//
// pipeline takes Options (each zero field the default of the stage that
// owns it) and inputs, capture files or a live source; it gives findings,
// producer profiles, a report.Summary or report.Counters, and evidence
// pcaps. It imports every stage and is imported only by cmd/kdupcap, which
// keeps the flags, the sinks and the exit codes: pipeline must never import
// cmd/kdupcap, and no stage imports pipeline.
//
// # Runs
//
// An Analysis reads capture files to their end as one timeline merged by
// time (Inputs), on one goroutine, split in two (the reading goroutine
// reads, reassembles and decrypts, a second decodes and detects, in the
// same order: single.go; the default with a second core and one worker,
// on captures of 256 MiB or more, or standard input from a pipe),
// or with its connections sharded over Options.Workers (sharded.go): the
// same findings in the same order every way, the stages' shared state
// (connection numbers, topic names, error messages) kept in one
// decode.Shared in capture order. A Live run reads a
// live source until it is told to stop (and then what the source captured
// before the stop), reports each finding as soon as
// detect decides it, marks those sent while the kernel dropped packets,
// and writes their packets as evidence. A Correlate run reads the attempts
// that the runs of many hosts published (Options.Attempts, a
// fleet.Publisher) back from Kafka (a fleet.Consumer), merged by capture
// time, and detects across hosts what no host could alone.
//
// # Evidence
//
// Evidence is the packets that show a finding: an Analysis writes those of
// all its findings to one file (WriteEvidence, reading the inputs again),
// a Live run one file per finding from capture's Evidence ring. Both keep
// every attempt from EvidenceMargin before it to EvidenceMargin after its
// answer (detect.Finding.Span).
//
// # Bounds and bad input
//
// pipeline adds no state that grows with the input beyond the stages'
// own bounds: the sharded run holds shardBatches epochs of packets per
// worker, the split run splitBatches batches of bytes, a Live run the drop times of the last maxDropTimes drops and
// lists maxLiveConnections connections. Input errors are returned, each
// naming its file and position, and what was read before them is kept.
//
// # Files
//
//   - options.go: Options, their checks, AutoWorkers, the stages' options.
//   - input.go: Inputs, opening and merging files, the packet loop.
//   - single.go: the run of one Assembler and one Decoder, on one
//     goroutine or split (decode and detect on a second one, the default
//     with two cores on a large capture); connections kept out (Ignore).
//   - sharded.go: the run over workers and its merger.
//   - analysis.go: Analysis, the run of `kdupcap analyze`.
//   - live.go: Live, the run of `kdupcap live`, its drop marks and evidence files.
//   - evidence.go: the spans a finding's evidence keeps; WriteEvidence;
//     EvidenceFile, the --write-dups file checked before reading.
//   - sasl.go: withoutSASL, which cuts SASL authentications out of them.
//   - tls.go: the TLS layer of a run: key logs, the Decrypter, its summary.
//   - summary.go: report.Summary from the stages' counts.
//   - attempts.go: AttemptSink, what sees every exchange, connection end
//     and transaction request (EndTxn, InitProducerId) before detect
//     (--attempts), and the tap that feeds it.
//   - correlate.go: Correlate, the run of `kdupcap correlate`: the
//     attempts of many hosts through a live run's detection; StableID.
package pipeline
