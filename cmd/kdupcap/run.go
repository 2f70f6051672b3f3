package main

import (
	"context"
	"fmt"
	"io"
)

// Exit codes: a public contract that scripts rely on.
const (
	exitOK        = 0
	exitFailure   = 1 // an internal failure writing the output
	exitUsage     = 2 // bad usage, or input that could not be read (wholly or in part)
	exitDuplicate = 3 // --fail-on-duplicate and a finding was duplicated or unconfirmed
	// analyze stopped by a signal, after printing what it had read: the
	// shell's 128 + the signal's number.
	exitSIGINT  = 130
	exitSIGTERM = 143
)

const usage = `kdupcap finds Kafka producer retries that wrote data twice, from packet captures.

Usage:
  kdupcap analyze [flags] FILE [FILE ...]   analyze capture files (pcap, pcapng; .gz/.zst; - for stdin)
  kdupcap live -i INTERFACE [flags]         sniff a live interface and report re-sends as they happen
  kdupcap version                           print the version

Run 'kdupcap analyze -h' or 'kdupcap live -h' for their flags.
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run is the whole CLI: main only hands it the process's arguments and
// streams, so tests call it directly.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "analyze":
		ctx, stop := stopContext(context.Background())
		defer stop()
		return runAnalyze(ctx, args[1:], stdin, stdout, stderr)
	case "live":
		return runLiveCLI(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "kdupcap", version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "kdupcap: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
