package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
)

// analyzeConfig holds the analyze flags: the run's options, and what the
// CLI does with its answer.
type analyzeConfig struct {
	opts            pipeline.Options
	format          string
	failOnDuplicate bool
	files           []string
	quiet           bool
	writeDups       string // --write-dups FILE: pipeline.Analysis.WriteEvidence
	clockSkew       clockSkewFlag
	skew            []time.Duration // per file, from clockSkew
	maxInput        int64           // --max-input-bytes: pipeline.Inputs.MaxBytes
	budgetRatio     float64         // --decompress-budget: times the inputs' size
}

func parseAnalyzeFlags(args []string, stderr io.Writer) (*analyzeConfig, error) {
	cfg := &analyzeConfig{}
	fs := flag.NewFlagSet("kdupcap analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: kdupcap analyze [flags] FILE [FILE ...]\n\n"+
			"Reads pcap or pcapng captures (gzip or zstd compressed too; - is standard input),\n"+
			"finds ProduceRequests whose record batch was sent more than once, and says whether\n"+
			"the broker's log got it twice.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	o := &cfg.opts
	fs.StringVar(&cfg.format, "format", "table", "output format: table or json (JSON Lines)")
	sf := addStageFlags(fs, o, stageUsage{port: "comma-separated broker ports taken as Kafka",
		window: "how long (capture time) a batch is remembered after its last attempt",
		idle:   "capture time after which an idle TCP connection is closed and buffered segments are given up"})
	fs.BoolVar(&o.Sniff, "sniff", true, "also take connections on other ports whose bytes parse as Kafka requests")
	fs.BoolVar(&cfg.failOnDuplicate, "fail-on-duplicate", false, "exit 3 when any finding is duplicated or unconfirmed")
	fs.Func("reorder-window", "capture `TIME` a hole in a TCP stream that the peer acknowledged is held open for its segment to come late, reordered (default "+capture.DefaultReorderWindow.String()+"; 0: given up at once)", func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return err
		case d < 0:
			return errors.New("must not be negative")
		case d == 0:
			d = -1 // pipeline.Options: none
		}
		o.ReorderWindow = d
		return nil
	})
	fs.StringVar(&cfg.writeDups, "write-dups", "", writeDupsUsage)
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress bar (there is one on stderr only when stderr is a terminal)")
	fs.IntVar(&o.Workers, "workers", 0, workersUsage)
	fs.Func("max-input-bytes", "stop reading after `SIZE` bytes of capture (decompressed; e.g. 20GB, 512MiB), deciding and reporting what was read; 0: no bound", func(s string) error {
		n, err := parseSize(s)
		cfg.maxInput = n
		return err
	})
	fs.Float64Var(&cfg.budgetRatio, "decompress-budget", defaultBudgetRatio, "decompress for records and record matching at most `N` times the capture files' size (at least 1GiB; 4GiB from standard input); the batches after are left compressed, counted")
	fs.Var(&cfg.clockSkew, "clock-skew", "`FILE=DURATION` added to every timestamp of one capture file (e.g. broker2.pcap=-1.5s), repeated per file; FILE may be a 1-based position")
	// Flags may come before, between or after the files, as people type
	// them; "--" ends the flags, so a file named like one can be given.
	for rest := args; len(rest) > 0; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		left := fs.Args()
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			cfg.files = append(cfg.files, left...)
			break
		}
		if len(left) == 0 {
			break
		}
		cfg.files = append(cfg.files, left[0])
		rest = left[1:]
	}
	switch cfg.format {
	case "table", "json":
	default:
		return nil, fmt.Errorf("--format %q: want table or json", cfg.format)
	}
	if err := sf.check(); err != nil {
		return nil, err
	}
	if cfg.budgetRatio <= 0 {
		return nil, fmt.Errorf("--decompress-budget %v: want a positive ratio", cfg.budgetRatio)
	}
	if len(cfg.files) == 0 {
		fs.Usage()
		return nil, errors.New("no capture file given")
	}
	if i := slices.Index(cfg.files, "-"); i >= 0 && slices.Contains(cfg.files[i+1:], "-") {
		return nil, errors.New("- (standard input) given more than once: it can be read only once")
	}
	if cfg.writeDups != "" && slices.Contains(cfg.files, "-") {
		return nil, errors.New("--write-dups reads the inputs twice: not with - (standard input), which can be read only once")
	}
	var err error
	if cfg.skew, err = cfg.clockSkew.resolve(cfg.files); err != nil {
		return nil, err
	}
	return cfg, nil
}

func parsePorts(s string) ([]uint16, error) {
	var ports []uint16
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseUint(f, 10, 16)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("--port: %q is not a TCP port", f)
		}
		ports = append(ports, uint16(p))
	}
	if len(ports) == 0 {
		// decode would take no ports as its default, 9092: say so instead.
		return nil, fmt.Errorf("--port %q: no port given", s)
	}
	return ports, nil
}

// runAnalyze is `kdupcap analyze`; ctx done (a signal) stops the reading,
// and what was read is decided and printed, marked as interrupted.
func runAnalyze(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseAnalyzeFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap analyze: %v\n", err)
		return exitUsage
	}

	var out report.Writer
	if cfg.format == "json" {
		out = report.NewJSON(stdout)
	} else {
		out = report.NewTable(stdout)
	}

	in := pipeline.Inputs{Files: cfg.files, Skew: cfg.skew, Stdin: stdin, Stop: ctx.Done(), MaxBytes: cfg.maxInput}
	cfg.opts.DecompressBudget = decompressBudget(cfg.budgetRatio, in.Size())
	an := pipeline.NewAnalysis(cfg.opts)
	var bar *report.Progress
	if isTerminal(stderr) && !cfg.quiet {
		bar = report.NewProgress(stderr, in.Size(), progressInterval, an.Stats)
	}
	readErrs := an.Read(in, func(r pipeline.Read) { bar.Update(r.Input, r.Capture) })
	bar.Finish()
	findings := an.Finish()
	var inputErrs []string
	for _, err := range readErrs {
		inputErrs = append(inputErrs, err.Error())
		fmt.Fprintf(stderr, "kdupcap: %v\n", err)
	}

	for _, f := range findings {
		if err := out.Finding(f); err != nil {
			fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", err)
			return exitFailure
		}
	}
	if err := writeProducers(out, an.Producers()); err != nil {
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", err)
		return exitFailure
	}
	sum := an.Summary(inputErrs)
	sig := stoppedBy(ctx)
	if an.Stopped() && sig != nil {
		sum.Interrupted = signalName(sig)
	}
	if err := out.Summary(sum); err != nil {
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", err)
		return exitFailure
	}
	for _, e := range an.Errors() {
		fmt.Fprintf(stderr, "kdupcap: warning: %s\n", e)
	}
	if cfg.writeDups != "" {
		n, err := an.WriteEvidenceFile(cfg.writeDups, findings)
		if err != nil {
			fmt.Fprintf(stderr, "kdupcap: --write-dups: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stderr, "kdupcap: wrote %d packets of %d findings to %s\n", n, len(findings), cfg.writeDups)
	}

	switch {
	case an.Stopped() && sig != nil:
		fmt.Fprintf(stderr, "kdupcap: %s: stopped reading; the findings are those of the packets read before it\n", signalName(sig))
		return signalExit(sig)
	case len(inputErrs) > 0:
		return exitUsage
	case cfg.failOnDuplicate && (sum.ByVerdict[string(detect.Duplicated)] > 0 || sum.ByVerdict[string(detect.Unconfirmed)] > 0):
		return exitDuplicate
	}
	return exitOK
}

// defaultBudgetRatio is --decompress-budget's default: far beyond what
// real batches compress by (zstd of JSON, some 10x), so that only a
// compression bomb meets it; minBudget is the least budget given.
const (
	defaultBudgetRatio = 64
	minBudget          = 1 << 30
)

// decompressBudget is the run's decompression budget: ratio times size, at
// least minBudget; decode's default when size is not known (-1: standard
// input).
func decompressBudget(ratio float64, size int64) int64 {
	if size < 0 {
		return 0
	}
	return max(int64(ratio*float64(size)), minBudget)
}

// progressInterval is how often the progress bar is redrawn at most.
const progressInterval = 100 * time.Millisecond

// writeDupsUsage is the help text of --write-dups.
const writeDupsUsage = "write every packet of every finding's attempts and responses (and the fetches and transaction requests it relies on) to `FILE`, a pcap that analyze reads back into the same findings"
