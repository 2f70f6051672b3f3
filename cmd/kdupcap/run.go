package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes: a public contract that scripts rely on.
const (
	exitOK        = 0
	exitFailure   = 1 // an internal failure writing the output
	exitUsage     = 2 // bad usage, or input that could not be read (wholly or in part)
	exitDuplicate = 3 // --fail-on-duplicate and a finding may have put records in the log twice (report.Harmful)
	exitNothing   = 4 // --fail-on-duplicate and the capture held no produce request: nothing to judge
	// analyze stopped by a signal, after printing what it had read: the
	// shell's 128 + the signal's number.
	exitSIGINT  = 130
	exitSIGTERM = 143
)

// exitStatus says what an exit code means, for the man page.
type exitStatus struct {
	code    int
	meaning string
}

// exitStatuses are the exit codes above, as the man page lists them.
func exitStatuses() []exitStatus {
	return []exitStatus{
		{exitOK, "the run ended, with findings or without."},
		{exitFailure, "the output (standard output, --write-dups, a sink of live) could not be written."},
		{exitUsage, "bad usage (a flag, a value, a command), an interface that cannot be opened, or an input that could not be read wholly; what was read before the fault is still reported."},
		{exitDuplicate, "analyze --fail-on-duplicate and a finding may have put records in the log twice: duplicated, or unconfirmed of a producer that is not idempotent."},
		{exitNothing, "analyze --fail-on-duplicate and the capture held no produce request: nothing to judge."},
		{exitSIGINT, "analyze stopped by SIGINT, after printing what it had read (143: by SIGTERM)."},
	}
}

// commands are kdupcap's commands, in the order the help lists them.
func commands() []command {
	cmds := []command{
		{name: "analyze", synopsis: "[flags] FILE [FILE ...]",
			summary: "analyze capture files (pcap, pcapng; .gz/.zst; - for stdin)",
			about: "Reads pcap or pcapng captures (gzip or zstd compressed too; - is standard input), " +
				"finds ProduceRequests whose record batch was sent more than once, and says whether " +
				"the broker's log got it twice. Flags may come before, between or after the files; -- ends them.",
			flags: func() *flag.FlagSet { fs, _ := analyzeFlags(&analyzeConfig{}); return fs },
			files: true},
		{name: "live", synopsis: "-i INTERFACE [flags]",
			summary: "sniff a live interface and report re-sends as they happen",
			about: "Sniffs Kafka traffic on a live interface (Linux AF_PACKET; needs root or " +
				"CAP_NET_RAW) and reports re-sent produce batches as soon as they are decided. " +
				"SIGINT or SIGTERM flushes what is pending, prints a profile per producer " +
				"(settings, latency per broker, re-sends, diagnosis) and the summary, and exits 0.",
			flags: func() *flag.FlagSet { fs, _ := liveFlags(&liveConfig{}, false); return fs }},
		{name: "correlate", synopsis: "--from kafka://HOST:PORT/TOPIC --group NAME [flags]",
			summary: "find re-sends across broker hosts from the attempts they publish",
			about: "Reads the produce attempts that kdupcap live or analyze --attempts publish from many hosts " +
				"to a Kafka topic, as a member of a consumer group (the instances of one group share the " +
				"partitions and take over those of one that stops), merges them by capture time and reports " +
				"the re-sends of each producer across hosts as live does: findings only the fleet sees say " +
				"\"scope\":\"fleet\" with every attempt's host, and carry a stable ID. SIGINT or SIGTERM " +
				"(or --exit-idle) decides what is held and prints the producers and the summary.",
			flags: func() *flag.FlagSet { return correlateFlags(&correlateConfig{}) }},
		{name: "version", synopsis: "[--format text|json]",
			summary: "print the version, commit and Go version of this binary",
			about:   "Prints the version of kdupcap, the commit and time of the source it was built from (and whether it had changes not committed), the Go version and the platform, from the build information the Go toolchain writes into the binary.",
			flags:   func() *flag.FlagSet { return versionFlags(new(string)) }},
		{name: "completion", synopsis: "bash|zsh|fish",
			summary:  "print a shell completion script",
			about:    completionAbout,
			flags:    func() *flag.FlagSet { return newFlagSet("kdupcap completion") },
			operands: shells()},
		{name: "help", synopsis: "[COMMAND]",
			summary: "show the help of kdupcap or of a command",
			flags:   func() *flag.FlagSet { return newFlagSet("kdupcap help") }},
		{name: "man", hidden: true,
			summary: "write the man page (roff) to standard output",
			flags:   func() *flag.FlagSet { return newFlagSet("kdupcap man") }},
	}
	names := commandNames(cmds)
	for i := range cmds {
		if cmds[i].name == "help" {
			cmds[i].operands = names // help's operand is a command
		}
	}
	return cmds
}

// run is the whole CLI: main only hands it the process's arguments and
// streams, so tests call it directly.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage(stderr, cmds))
		return exitUsage
	}
	switch args[0] {
	case "analyze":
		ctx, stop := stopContext(context.Background())
		defer stop()
		return runAnalyze(ctx, args[1:], stdin, stdout, stderr)
	case "live":
		return runLiveCLI(args[1:], stdout, stderr)
	case "correlate":
		return runCorrelateCLI(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return runVersion(cmds, args[1:], stdout, stderr)
	case "completion":
		return runCompletion(cmds, args[1:], stdout, stderr)
	case "man":
		return runMan(cmds, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return runHelp(cmds, args[1:], stdout, stderr)
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "kdupcap: unknown flag %s; see kdupcap --help\n", quoteArg(args[0]))
	} else {
		fmt.Fprintf(stderr, "kdupcap: unknown command %s%s; see kdupcap --help\n", quoteArg(args[0]), didYouMean(args[0], commandNames(cmds), quoteArg))
	}
	return exitUsage
}

// runHelp is `kdupcap help [COMMAND]`: the help of kdupcap or of COMMAND,
// on standard output.
func runHelp(cmds []command, args []string, stdout, stderr io.Writer) int {
	c, _ := lookup(cmds, "help")
	operands, code := parseCommand(c, c.flags(), args, stdout, stderr)
	switch {
	case code >= 0:
		return code
	case len(operands) == 0:
		return writeOut(stdout, topUsage(stdout, cmds))
	case len(operands) > 1:
		return usageFail(stderr, c, fmt.Errorf("one command at most, not %d", len(operands)))
	}
	if h, ok := lookup(cmds, operands[0]); ok {
		return writeHelp(stdout, h)
	}
	fmt.Fprintf(stderr, "kdupcap help: unknown command %s%s; see kdupcap --help\n", quoteArg(operands[0]), didYouMean(operands[0], commandNames(cmds), quoteArg))
	return exitUsage
}

// parseCommand parses the flags of a command that has few (version,
// completion, help, man) with fs, one of c.flags, into its operands; code
// is -1 when the command is to run, else its exit code: the help written
// to stdout (exitOK), or a flag error to stderr (exitUsage).
func parseCommand(c command, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (operands []string, code int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, writeHelp(stdout, c)
		}
		return nil, usageFail(stderr, c, flagError(fs, err))
	}
	return fs.Args(), -1
}

// usageFail writes c's usage error err on stderr, one line: exitUsage.
func usageFail(stderr io.Writer, c command, err error) int {
	fmt.Fprintf(stderr, "kdupcap %s: %v; see kdupcap %s --help\n", c.name, err, c.name)
	return exitUsage
}

// commandNames are the names of the commands the help lists (not the
// hidden ones), in its order.
func commandNames(cmds []command) []string {
	var names []string
	for _, c := range cmds {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}
