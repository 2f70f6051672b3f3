// Command kdupcap finds Kafka producer retries that wrote data twice,
// straight from packet captures.
//
//	kdupcap analyze dump.pcap [more.pcapng ...]
//	kdupcap live -i eth0 [--metrics :9100] [--emit kafka://host:9092/topic]
//	kdupcap live -i eth0 --attempts kafka://host:9092/kdupcap-attempts
//	kdupcap correlate --from kafka://host:9092/kdupcap-attempts --group kdupcap
//
// # Where it sits
//
//	capture -> decode -> detect -> profile -> report -> pipeline -> cmd/kdupcap
//
// cmd/kdupcap is the end of the flow and wiring only: it parses the flags
// into pipeline.Options or pipeline.LiveOptions, opens the live source
// (capture/live) and drops privileges (--user), runs pipeline, and hands what
// the run gives (findings, producer profiles, the summary) to report's
// writers and to the network sinks of report/metrics and report/emit. It
// holds no protocol logic and no rule of its own; defaults belong to the
// stages and pipeline. No package of the module imports it, and it must never
// import internal/kafkatest, internal/gencap or chromedp (with its cdproto)
// outside its tests: they are test and bench tools, not part of the binary.
//
// # What it takes and gives
//
// It takes command-line arguments, standard input (analyze's "-") and the
// process's signals: SIGINT or SIGTERM ends a live run, which then flushes
// what is pending and prints the producer profiles and the summary. It gives
// text, lines or JSON on standard output, warnings and the progress bar on
// standard error, the pcap of --write-dups and the evidence files of live,
// the /metrics and /report endpoints and emitted records. run takes the
// arguments and streams, with a local FlagSet for each subcommand, so tests call it
// directly; main only hands it the process's own.
//
// # Who owns the bytes
//
// cmd owns only its flags and the sinks it opens: pipeline opens the inputs,
// each stage owns the bytes it reads, and the findings and profiles pipeline
// hands over go to the writers unchanged.
//
// # Errors and exit codes
//
// 0: the run ended (findings or not). 2: bad usage, an interface that cannot
// be opened, or an input that could not be read wholly; the message names the
// file and the byte position, and everything read before the fault is still
// reported; a usage error is one line naming the command and the flag
// ("kdupcap analyze: unknown flag --bogus; see kdupcap analyze --help"),
// and the help (-h, --help, help) goes to standard output with exit 0. 3: analyze --fail-on-duplicate and a finding is duplicated or
// unconfirmed. 130 or 143: analyze stopped by SIGINT or SIGTERM, after
// printing what it had read. 1: the output, a sink included, could not be
// written. The
// process's memory limit is 208 MiB and GOGC 50 unless GOMEMLIMIT or GOGC say
// otherwise, which the default bounds of the stages stay well below.
//
// # Files
//
//   - main.go: main, handing the process's arguments and streams to run.
//   - run.go: run, the table of commands, help, the exit codes.
//   - help.go: the command type; the help of kdupcap and of each command,
//     written from the FlagSets that parse, so the help lists what parses.
//   - wrap.go: text wrapped to the terminal's width (else COLUMNS, else
//     80).
//   - flagerrors.go: FlagSets that print nothing; the flag package's errors
//     rewritten to one line naming the command and the flag.
//   - flagvalues.go: flag values checked as they are set: numbers in range,
//     fixed words and lists of them (which the completions offer).
//   - version.go: kdupcap version: -ldflags main.version, else the build
//     information (module version, VCS commit and time, Go).
//   - completion.go: kdupcap completion; completion_bash.go,
//     completion_zsh.go and completion_fish.go: each shell's script.
//   - manpage.go: kdupcap man (hidden): kdupcap(1) in roff, for make man.
//   - flags.go: the flags analyze and live share; the memory limit and GOGC.
//   - signals.go: SIGINT and SIGTERM: a context they end, the exit codes.
//   - analyze.go: kdupcap analyze: its flags, the run, --write-dups,
//     --html (report/html).
//   - clockskew.go: the repeated --clock-skew FILE=DURATION flag.
//   - cluster.go: the repeated --cluster NAME=HOST:PORT[,HOST:PORT...] flag.
//   - live.go: kdupcap live: its flags, signals, sinks, status lines and
//     metrics.
//   - livereport.go: live's /report, the HTML page of the run so far
//     (report/html's Store), asked of the run's goroutine at its ticks.
//   - producers.go: writing the producer profiles when the writer takes them.
//   - correlate.go: kdupcap correlate: its flags, the fleet.Consumer, the
//     sinks, the summary of the hosts.
//   - correlate_kafka.go: what kdupcap's own Kafka clients share: the
//     --kafka-* TLS and SASL flags (--emit, --attempts, --from), --attempts
//     and --host of analyze and live, the publisher's summary.
package main
