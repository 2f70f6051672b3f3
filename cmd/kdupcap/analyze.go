package main

import (
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
	"github.com/kdupcap/kdupcap/report"
)

// Defaults of the analyze flags.
const (
	defaultWindow      = 10 * time.Minute
	defaultIdleTimeout = 2 * time.Minute
)

// analyzeConfig holds the analyze flags.
type analyzeConfig struct {
	format          string
	ports           []uint16
	sniff           bool
	failOnDuplicate bool
	window          time.Duration
	maxBatches      int
	idleTimeout     time.Duration
	scope           detect.Scope
	records         int
	recordMatch     bool
	appDuplicates   bool
	workers         int
	files           []string
	quiet           bool
	writeDups       string // --write-dups FILE: see writedups.go
	clockSkew       clockSkewFlag
	skew            []time.Duration // per file, from clockSkew
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
	fs.StringVar(&cfg.format, "format", "table", "output format: table or json (JSON Lines)")
	ports := fs.String("port", "9092", "comma-separated broker ports taken as Kafka")
	fs.BoolVar(&cfg.sniff, "sniff", true, "also take connections on other ports whose bytes parse as Kafka requests")
	fs.BoolVar(&cfg.failOnDuplicate, "fail-on-duplicate", false, "exit 3 when any finding is duplicated or unconfirmed")
	fs.DurationVar(&cfg.window, "window", defaultWindow, "how long (capture time) a batch is remembered after its last attempt")
	fs.IntVar(&cfg.maxBatches, "max-batches", detect.DefaultMaxBatches, maxBatchesUsage)
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", defaultIdleTimeout, "capture time after which an idle TCP connection is closed and buffered segments are given up")
	scope := fs.String("scope", "both", scopeUsage)
	fs.IntVar(&cfg.records, "records", 0, recordsUsage)
	fs.BoolVar(&cfg.recordMatch, "record-match", true, recordMatchUsage)
	fs.BoolVar(&cfg.appDuplicates, "app-duplicates", false, appDuplicatesUsage)
	fs.StringVar(&cfg.writeDups, "write-dups", "", writeDupsUsage)
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress bar (there is one on stderr only when stderr is a terminal)")
	fs.IntVar(&cfg.workers, "workers", 0, workersUsage)
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
	var err error
	if cfg.ports, err = parsePorts(*ports); err != nil {
		return nil, err
	}
	if cfg.window <= 0 || cfg.idleTimeout <= 0 {
		return nil, errors.New("--window and --idle-timeout must be positive")
	}
	if cfg.scope, err = parseScope(*scope); err != nil {
		return nil, err
	}
	if err := checkRecords(cfg.records); err != nil {
		return nil, err
	}
	if cfg.workers < 0 || cfg.workers > maxWorkers {
		return nil, fmt.Errorf("--workers %d: want 1 to %d, or 0 to choose", cfg.workers, maxWorkers)
	}
	if cfg.workers == 0 {
		cfg.workers = autoWorkers(cfg.records, cfg.appDuplicates)
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

func runAnalyze(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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

	prof := detect.NewProfiler(detect.ProfilerOptions{})
	opts := pipelineOptions{
		ports:       cfg.ports,
		sniff:       cfg.sniff,
		window:      cfg.window,
		idleTimeout: cfg.idleTimeout,
		maxBatches:  cfg.maxBatches,
		scope:       cfg.scope,
		records:     cfg.records,
		recordMatch: cfg.recordMatch,
		allRecords:  cfg.appDuplicates,
		observe:     prof.Produce,
	}
	var (
		readErrs   []error
		findings   []detect.Finding
		summary    func(files, inputErrs []string) report.Summary
		decodeErrs func() []string
		p          *pipeline
	)
	barOn := progressOn(isTerminal(stderr), cfg.quiet)
	// --write-dups reads the inputs again knowing what one Decoder
	// learned (which Metadata response named a topic): one worker.
	if cfg.workers > 1 && cfg.writeDups == "" {
		sp := newShardedPipeline(opts, cfg.workers)
		bar := newProgress(stderr, barOn, inputSize(cfg.files), sp.det.Stats)
		sp.onRead = bar.update
		readErrs = sp.readFiles(cfg.files, cfg.skew, stdin)
		bar.finish()
		findings = sp.finish()
		summary, decodeErrs = sp.summary, sp.errors
	} else {
		p = newPipeline(opts)
		bar := newProgress(stderr, barOn, inputSize(cfg.files), p.det.Stats)
		p.onRead = bar.update
		readErrs = p.readFiles(cfg.files, cfg.skew, stdin)
		bar.finish()
		findings = p.finish()
		summary, decodeErrs = p.summary, p.dec.Errors
	}
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
	for i := range findings {
		prof.Finding(&findings[i])
	}
	if err := writeProducers(out, prof); err != nil {
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", err)
		return exitFailure
	}
	sum := summary(cfg.files, inputErrs)
	sum.ProducerExchangesOmitted = prof.Omitted()
	if err := out.Summary(sum); err != nil {
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", err)
		return exitFailure
	}
	for _, e := range decodeErrs() {
		fmt.Fprintf(stderr, "kdupcap: warning: %s\n", e)
	}
	if cfg.writeDups != "" {
		if err := p.writeDups(cfg, findings, stderr); err != nil {
			fmt.Fprintf(stderr, "kdupcap: --write-dups: %v\n", err)
			return exitFailure
		}
	}

	switch {
	case len(inputErrs) > 0:
		return exitUsage
	case cfg.failOnDuplicate && (sum.ByVerdict[string(detect.Duplicated)] > 0 || sum.ByVerdict[string(detect.Unconfirmed)] > 0):
		return exitDuplicate
	}
	return exitOK
}

// readFiles feeds the capture files into the pipeline as one timeline,
// merged by timestamp (skew[i], if any, added to every timestamp of
// files[i]): captures taken at the same time on several hosts interleave,
// and a capture rotated into several files (tcpdump -C) reads as if its
// files were read one after the other, connections running on across them.
// "-" is stdin. It returns the input errors, each naming its file and
// position, in the order met; a file that fails is dropped and the others
// go on, and what was read before an error stays in the pipeline.
func (p *pipeline) readFiles(files []string, skew []time.Duration, stdin io.Reader) []error {
	m, errs := openMerged(files, skew, stdin)
	defer m.Close()
	return append(errs, eachPacket(m, p.onRead, func(pkt capture.Packet) {
		p.asm.Add(pkt)
		p.noteLink(pkt.LinkType)
	})...)
}

// eachPacket hands fn every packet of m in merged order, telling onRead
// (if any) the input bytes read every progressEvery+1 packets and at the
// end, and returns the input errors met: a file that fails is dropped and
// the others go on.
func eachPacket(m *capture.Merged, onRead func(int64), fn func(capture.Packet)) []error {
	var errs []error
	for n := 0; ; n++ {
		if onRead != nil && n&progressEvery == 0 {
			onRead(m.InputBytes())
		}
		pkt, err := m.Next()
		if err == io.EOF {
			if onRead != nil {
				onRead(m.InputBytes())
			}
			return errs
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fn(pkt)
	}
}

// openMerged opens the capture files (see readFiles) and merges them; it
// returns the errors of the files that could not be opened.
func openMerged(files []string, skew []time.Duration, stdin io.Reader) (*capture.Merged, []error) {
	var (
		errs  []error
		srcs  []*capture.Source
		sskew []time.Duration
	)
	for i, name := range files {
		var (
			src *capture.Source
			err error
		)
		if name == "-" {
			src, err = capture.NewSource("-", stdin)
		} else {
			src, err = capture.Open(name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		srcs = append(srcs, src)
		if i < len(skew) {
			sskew = append(sskew, skew[i])
		}
	}
	return capture.Merge(srcs, capture.MergeOptions{ClockSkew: sskew}), errs
}
