package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/html"
)

// analyzeConfig holds the analyze flags: the run's options, and what the
// CLI does with its answer.
type analyzeConfig struct {
	opts            pipeline.Options
	format          string
	html            string // --html FILE: the HTML report, besides --format's output
	failOnDuplicate bool
	files           []string
	quiet           bool
	writeDups       string // --write-dups FILE: pipeline.Analysis.WriteEvidence
	force           bool   // --force: --write-dups and --html may overwrite an existing FILE
	clockSkew       clockSkewFlag
	skew            []time.Duration // per file, from clockSkew
	maxInput        int64           // --max-input-bytes: pipeline.Inputs.MaxBytes
	budgetRatio     float64         // --decompress-budget: times the inputs' size

	// verdicts (--verdict) are the verdicts of the findings printed, all
	// when empty; all (--all) prints every finding of the table in full.
	verdicts []detect.Verdict
	all      bool

	// attempts (--attempts, --host) publishes the attempts read, through
	// the --kafka-* options (correlate_kafka.go).
	attempts *attemptsFlags
	kafka    *kafkaFlags
}

// parseAnalyzeFlags reads analyze's arguments into a config. Its errors
// are one line that ends with where the help is; --help writes the help to
// stdout and returns flag.ErrHelp.
func parseAnalyzeFlags(args []string, stdout io.Writer) (*analyzeConfig, error) {
	cfg := &analyzeConfig{}
	fs, sf := analyzeFlags(cfg)
	cfg, err := cfg.read(fs, sf, args, stdout)
	return cfg, seeHelp(fs, err)
}

// analyzeFlags defines analyze's flags into cfg on a new FlagSet: the one
// set that parses them, and that the help, the completions and the man
// page are written from.
func analyzeFlags(cfg *analyzeConfig) (*flag.FlagSet, *stageFlags) {
	fs := newFlagSet("kdupcap analyze")
	o := &cfg.opts
	choiceVar(fs, &cfg.format, "format", "table", []string{"table", "json", "lines", "html"}, "output format: table, json (JSON Lines), lines (one line per finding, as live prints) or html (the page of --html, to standard output)")
	fs.StringVar(&cfg.html, "html", "", "also write the report as one self-contained HTML page (timeline, findings, producers; no network needed to open it) to `FILE`, checked before reading, never an input file, and an existing FILE only with --force")
	sf := addStageFlags(fs, o, stageUsage{port: "comma-separated broker `PORTS` taken as Kafka",
		window: "how long (capture time) a batch is remembered after its last attempt",
		idle:   "capture time after which an idle TCP connection is closed and buffered segments are given up"})
	fs.BoolVar(&o.Sniff, "sniff", true, "also take connections on other ports whose bytes parse as Kafka requests")
	fs.BoolVar(&cfg.failOnDuplicate, "fail-on-duplicate", false, failOnDuplicateUsage)
	fs.Func("reorder-window", "capture `TIME` a hole in a TCP stream that the peer acknowledged is held open for its segment to come late, reordered (default "+capture.DefaultReorderWindow.String()+"; 0: given up at once)", func(s string) error {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return errors.New("want a duration such as 10ms, or 0")
		case d < 0:
			return errors.New("must not be negative")
		case d == 0:
			d = -1 // pipeline.Options: none
		}
		o.ReorderWindow = d
		return nil
	})
	fs.StringVar(&cfg.writeDups, "write-dups", "", writeDupsUsage)
	fs.BoolVar(&cfg.force, "force", false, "let --write-dups and --html overwrite an existing FILE (never an input file)")
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress bar (there is one on stderr only when stderr is a terminal)")
	intVar(fs, &o.Workers, "workers", 0, 0, pipeline.MaxWorkers, workersUsage)
	fs.Func("max-input-bytes", "stop reading after `SIZE` bytes of capture (decompressed; e.g. 20GB, 512MiB), deciding and reporting what was read; 0: no bound", func(s string) error {
		n, err := parseSize(s)
		cfg.maxInput = n
		return err
	})
	positiveFloatVar(fs, &cfg.budgetRatio, "decompress-budget", defaultBudgetRatio, "decompress for records and record matching at most `N` times the capture files' size (at least 1GiB; 4GiB from standard input on a pipe); the batches after are left compressed, counted")
	listFunc(fs, "verdict", verdictWords(), "print only the findings of these verdicts, a comma-separated `LIST` of duplicated, deduplicated, single, unconfirmed, rejected (the headline and the summary count all)", func(s string) error {
		v, err := report.ParseVerdicts(s)
		cfg.verdicts = v
		return err
	})
	fs.BoolVar(&cfg.all, "all", false, "print every finding of the table in full; without it a harmless one (deduplicated, single, rejected, unconfirmed of an idempotent producer) is one line")
	fs.Var(&cfg.clockSkew, "clock-skew", "`FILE=DURATION` added to every timestamp of one capture file (e.g. broker2.pcap=-1.5s), repeated per file; FILE may be a 1-based position")
	cfg.attempts, cfg.kafka = addAttemptsFlags(fs), addKafkaFlags(fs)
	return fs, sf
}

// read parses args with fs and sf, analyzeFlags' of cfg, and checks them.
func (cfg *analyzeConfig) read(fs *flag.FlagSet, sf *stageFlags, args []string, stdout io.Writer) (*analyzeConfig, error) {
	// Flags may come before, between or after the files, as people type
	// them; "--" ends the flags, so a file named like one can be given.
	for rest := args; len(rest) > 0; {
		if err := fs.Parse(rest); err != nil {
			return nil, parseFailed(fs, err, stdout)
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
	if err := sf.check(); err != nil {
		return nil, err
	}
	if err := cfg.attempts.check(); err != nil {
		return nil, err
	}
	if len(cfg.files) == 0 {
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
	cfg, err := parseAnalyzeFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap analyze: %v\n", err)
		return exitUsage
	}

	var dups *pipeline.EvidenceFile
	if cfg.writeDups != "" {
		// Before any input is read: a path that cannot be written fails
		// now, not after the reading.
		if dups, err = pipeline.CreateEvidenceFile(cfg.writeDups, cfg.files, cfg.force); err != nil {
			fmt.Fprintf(stderr, "kdupcap analyze: --write-dups: %v\n", err)
			return exitUsage
		}
		defer dups.Discard()
	}

	var out report.Writer
	ropts := report.Options{Verdicts: cfg.verdicts, All: cfg.all}
	switch cfg.format {
	case "json":
		out = report.NewJSONWith(stdout, ropts)
	case "lines":
		out = report.NewLines(stdout)
	case "html":
		out = html.New(stdout, html.Options{Verdicts: cfg.verdicts})
	default:
		ropts.Width = report.OutputWidth(stdout, os.Getenv("COLUMNS"))
		out = report.NewTableWith(stdout, ropts)
	}
	if cfg.html != "" {
		page, err := createHTML(cfg.html, cfg.files, cfg.force)
		if err != nil {
			fmt.Fprintf(stderr, "kdupcap analyze: --html: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := page.Close(); err != nil {
				fmt.Fprintf(stderr, "kdupcap: --html: %v\n", err)
			}
		}()
		out = report.Multi(out, html.New(page, html.Options{Verdicts: cfg.verdicts}))
	}

	in := pipeline.Inputs{Files: cfg.files, Skew: cfg.skew, Stdin: stdin, Stop: ctx.Done(), MaxBytes: cfg.maxInput}
	cfg.opts.DecompressBudget = decompressBudget(cfg.budgetRatio, in.Size())
	pub, code := openAttempts(cfg.attempts, cfg.kafka, cfg.opts, stderr)
	if code != exitOK {
		return code
	}
	defer pub.release() // on an early return; closeAttempts closes it else
	if pub != nil {
		cfg.opts.Attempts = pub
	}
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
	if err := writeProducers(out, an.Producers(), an.Timeline); err != nil {
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", err)
		return exitFailure
	}
	sum := an.Summary(inputErrs)
	sum.FailedInputs = failedInputs(readErrs)
	pubFailed := closeAttempts(pub, &sum, stderr)
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
	if dups != nil {
		n, err := an.WriteEvidenceFile(dups, findings)
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
	case pubFailed:
		return exitFailure
	case cfg.failOnDuplicate:
		return failOnDuplicate(findings, &sum, stderr)
	}
	return exitOK
}

// createHTML creates the --html FILE before any input is read, so that a
// path that cannot be written fails at once. As pipeline.CreateEvidenceFile
// does for --write-dups, it refuses name when it is one of the inputs (the
// same file, spelled otherwise, through a symlink or a hard link too), even
// with overwrite, and when it is an existing regular file, unless overwrite
// (--force); a device or a pipe (/dev/stdout) is written as it is.
func createHTML(name string, inputs []string, overwrite bool) (*os.File, error) {
	st, err := os.Stat(name)
	created := err != nil // not there (or a dangling symlink)
	if err == nil && st.Mode().IsRegular() {
		if _, ok := pipeline.SameInput(st, inputs); ok {
			return nil, fmt.Errorf("%s is an input file", name)
		}
		if !overwrite {
			return nil, errPageExists(name)
		}
	}
	mode := os.O_WRONLY | os.O_CREATE
	if created && !overwrite {
		mode |= os.O_EXCL // created here, and by no one else meanwhile
	}
	f, err := os.OpenFile(name, mode, 0o666)
	if errors.Is(err, os.ErrExist) {
		return nil, errPageExists(name)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the page: %w", err)
	}
	// The file opened, whatever name went through, is not an input; it
	// is truncated only once that is known.
	if st, err = f.Stat(); err == nil {
		if _, ok := pipeline.SameInput(st, inputs); ok {
			f.Close()
			if created {
				os.Remove(name)
			}
			return nil, fmt.Errorf("%s is an input file", name)
		}
		if st.Mode().IsRegular() {
			err = f.Truncate(0)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("creating the page: %w", err)
	}
	return f, nil
}

// errPageExists is createHTML's error for an existing file without --force,
// worded as --write-dups's.
func errPageExists(name string) error {
	return fmt.Errorf("%s: file exists; give --force to overwrite it", name)
}

// failOnDuplicate is the exit code of --fail-on-duplicate after a run that
// read all its input: exitDuplicate when a finding may have put records in
// the log twice (report.Harmful: duplicated, or unconfirmed where the
// broker does not deduplicate), exitNothing when the capture held no
// produce request, each said on stderr in one line; else exitOK.
func failOnDuplicate(findings []detect.Finding, sum *report.Summary, stderr io.Writer) int {
	var dup, notIdempotent, changed, other int
	for i := range findings {
		f := &findings[i]
		switch {
		case !report.Harmful(f):
		case f.Verdict == detect.Duplicated:
			dup++
		case !f.Idempotent:
			notIdempotent++
		case f.ProducerChange != "":
			changed++
		default:
			other++
		}
	}
	if why := harmText(dup, notIdempotent, changed, other); why != "" {
		fmt.Fprintf(stderr, "kdupcap: %s (--fail-on-duplicate)\n", why)
		return exitDuplicate
	}
	if n, ok := sum.NothingToJudge(); ok {
		fmt.Fprintf(stderr, "kdupcap: nothing to judge: %s (--fail-on-duplicate)\n", n.Text)
		return exitNothing
	}
	return exitOK
}

// harmText says, in a few words, the findings --fail-on-duplicate fails
// on; "" when there is none.
func harmText(dup, notIdempotent, changed, other int) string {
	var parts []string
	if dup > 0 {
		parts = append(parts, findingCount(dup, "duplicated finding"))
	}
	if notIdempotent > 0 {
		parts = append(parts, findingCount(notIdempotent, "unconfirmed finding")+" of producers that are not idempotent")
	}
	if changed > 0 {
		parts = append(parts, findingCount(changed, "unconfirmed finding")+" re-sent under another producer epoch or ID")
	}
	if other > 0 {
		parts = append(parts, findingCount(other, "unconfirmed finding")+" the broker does not deduplicate")
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func findingCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// failedInputs says how far the results go in each file an input error
// ended early.
func failedInputs(errs []error) []report.FailedInput {
	var out []report.FailedInput
	for _, err := range errs {
		var ie *capture.InputError
		if !errors.As(err, &ie) {
			continue
		}
		out = append(out, report.FailedInput{File: ie.File, ResultsUpTo: ie.Offset, Decompressed: ie.Decompressed()})
	}
	return out
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
// input on a pipe).
func decompressBudget(ratio float64, size int64) int64 {
	if size < 0 {
		return 0
	}
	return max(int64(ratio*float64(size)), minBudget)
}

// progressInterval is how often the progress bar is redrawn at most.
const progressInterval = 100 * time.Millisecond

// writeDupsUsage is the help text of --write-dups.
const writeDupsUsage = "write every packet of every finding's attempts and responses (and the fetches and transaction requests it relies on) to `FILE`, a pcap that analyze reads back into the same findings; FILE is checked before reading, never an input file, and an existing FILE only with --force"

// failOnDuplicateUsage is the help text of --fail-on-duplicate.
const failOnDuplicateUsage = "exit 3 when a finding may have put records in the log twice: duplicated, or unconfirmed of a producer that is not idempotent (or re-sent under another epoch); exit 4 when the capture held no produce request (nothing to judge)"
