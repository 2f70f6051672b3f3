// Package benchrun measures whole programs on one capture, generated or of
// real clients, side by side, each as its own process: the bare pcapgo
// read loops (copying, the practical limit, and zero-copy), `kdupcap
// analyze` (at its default and with --workers 1), and tshark's Kafka
// dissector when installed; on a compressed capture (FILE.zst, FILE.gz),
// its decompressor alone to /dev/null and analyze. For each it records
// wall time, throughput in MB/s and packets/s, and the peak resident set
// size the kernel reports for the process (rusage ru_maxrss; benchrun keeps
// no large output, since a child's peak counts its parent's at the fork).
// `make bench` and `make bench-big` run it through cmd/benchrun; analyze's
// findings are checked against the generator's manifest, so a fast but wrong
// run fails the bench.
//
// # Place in the flow
//
// benchrun sits outside the flow (capture -> decode -> detect -> profile ->
// report -> pipeline -> cmd/kdupcap): it runs the built binaries and reads
// what they print. It imports internal/gencap for the Manifest, and must
// never import capture, decode, detect, profile, report or pipeline: it
// measures the programs as a user runs them, not their packages.
//
// # What it takes and gives
//
// [File] takes a [Config] (the binaries to run, how many times) and a capture
// whose manifest lies beside it, and gives one [Measure] per tool;
// [CheckFindings] compares analyze's JSON Lines with a [gencap.Manifest];
// [WriteTable] and [Ratios] print the measures; on a capture of real
// clients (its manifest's Source, made by internal/kafkatest/cmd/realcap,
// its broker's port in Manifest.Port) Ratios ends each line with issue
// 17's [Targets] for its MTU ([TargetsFor]), and a compressed capture's
// with [CompressedTarget]. [CoreRoundTrip] measures the machine: how long a
// cache line takes between two CPUs and back, what a run split over two
// goroutines pays for the bytes it hands on (issue 17's 1.6x of two
// goroutines over one rests on it). cmd/benchrun is the command,
// and cmd/readloop the read loop it measures, reading a pcap (or pcapng)
// with pcapgo alone.
//
// A TLS capture (its manifest's Config.TLS) is measured decrypted: analyze
// gets `--tls-keylog FILE.keys` (gencap.KeyLogPath; none for a pcapng that
// carries its keys), tshark `-o tls.keylog_file:FILE.keys` with the TLS
// port's data dissected as Kafka; a missing key log is an error. [Ratios]
// ends with decrypted analyze as a share of plaintext analyze on a file of
// the same MTU, against [TLSTarget].
//
// # Bytes and bad input
//
// A program's stdout is only counted, except the read loop's JSON and
// analyze's findings, which are parsed. A tool that fails is an error naming
// it and its arguments, with the first lines of its stderr; findings that
// differ from the manifest are an error, and so is an analyze whose peak RSS
// passes Config.MaxRSS: memory must not grow with the file.
//
// # Files
//
//   - benchrun.go: Config, Measure, File, CheckFindings, WriteTable and Ratios.
//   - cores.go: CoreRoundTrip.
package benchrun
