package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/fleet"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/emit"
	"github.com/kdupcap/kdupcap/report/metrics"
)

// correlateConfig holds the correlate flags.
type correlateConfig struct {
	opts        pipeline.CorrelateOptions
	from        string
	group       string
	format      string
	metricsAddr string
	emit        string
	lateness    time.Duration
	kafka       *kafkaFlags
	scope       string
}

// correlateFlags defines correlate's flags into cfg on a new FlagSet.
func correlateFlags(cfg *correlateConfig) *flag.FlagSet {
	fs := newFlagSet("kdupcap correlate")
	o := &cfg.opts
	fs.StringVar(&cfg.from, "from", "", "read the attempts that kdupcap live or analyze --attempts published, from `kafka://HOST:PORT[,HOST:PORT]/TOPIC` (required)")
	fs.StringVar(&cfg.group, "group", "", "the consumer group `NAME`: the instances of one group share the topic's partitions and take over those of an instance that stops (required)")
	choiceVar(fs, &cfg.format, "format", "lines", []string{"lines", "json", "table"}, "output format: lines (one line per finding), json (JSON Lines, as analyze) or table")
	fs.StringVar(&cfg.emit, "emit", "", "also publish every finding as a JSON record to `kafka://HOST:PORT[,HOST:PORT]/TOPIC`")
	fs.StringVar(&cfg.metricsAddr, "metrics", "", "serve Prometheus metrics on `ADDR` (e.g. :9464) at /metrics")
	intVar(fs, &o.Records, "records", 0, 0, pipeline.MaxRecords, "show the first `N` records of each finding's batch, of those the hosts published (the batches near a failure or a leader move); 0: none")
	durationVar(fs, &o.Window, "window", detect.DefaultWindow, time.Nanosecond, "how long (capture time) a batch is remembered after its last attempt; offsets are committed only for attempts older than this")
	intVar(fs, &o.MaxBatches, "max-batches", detect.DefaultMaxBatches, 1, math.MaxInt, maxBatchesUsage)
	durationVar(fs, &o.Settle, "settle", detect.DefaultSettle, time.Nanosecond, "how long to wait for a retry after an attempt answered with a retriable error (or not at all) before reporting")
	durationVar(fs, &cfg.lateness, "lateness", fleet.DefaultLateness, time.Nanosecond, "how long (capture time) an attempt waits for the hosts whose attempts come later, before it is taken in capture-time order")
	choiceVar(fs, &cfg.scope, "scope", "both", []string{"connection", "client", "both"}, scopeUsage)
	durationVar(fs, &o.Duration, "duration", 0, 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	intVar(fs, &o.Count, "count", 0, 0, math.MaxInt, "stop after this many findings (0: no limit)")
	durationVar(fs, &o.ExitIdle, "exit-idle", 0, 0, "stop once no attempt came for this long, deciding what is held, and print the summary (0: never)")
	cfg.kafka = addKafkaFlags(fs)
	return fs
}

// parseCorrelateFlags reads correlate's arguments into a config.
func parseCorrelateFlags(args []string, stdout io.Writer) (*correlateConfig, error) {
	cfg := &correlateConfig{}
	fs := correlateFlags(cfg)
	if err := fs.Parse(args); err != nil {
		return nil, seeHelp(fs, parseFailed(fs, err, stdout))
	}
	err := func() error {
		switch {
		case fs.NArg() > 0:
			return fmt.Errorf("unexpected argument %s", quoteArg(fs.Arg(0)))
		case cfg.from == "":
			return errors.New("--from kafka://HOST:PORT/TOPIC is required")
		case cfg.group == "":
			return errors.New("--group NAME is required")
		}
		if _, _, err := emit.ParseURL(cfg.from); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		if cfg.emit != "" {
			if _, _, err := emit.ParseURL(cfg.emit); err != nil {
				return err
			}
		}
		var err error
		cfg.opts.Scope, err = parseScope(cfg.scope)
		return err
	}()
	return cfg, seeHelp(fs, err)
}

// runCorrelateCLI is `kdupcap correlate`, stopped by SIGINT or SIGTERM.
func runCorrelateCLI(args []string, stdout, stderr io.Writer) int {
	ctx, stop := stopContext(context.Background())
	defer stop()
	return runCorrelate(ctx, args, stdout, stderr)
}

// runCorrelate reads attempts until ctx is done or a bound of the flags,
// then decides what is held, prints the summary and returns the exit code.
func runCorrelate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseCorrelateFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap correlate: %v\n", err)
		return exitUsage
	}
	co, err := cfg.kafka.options()
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap correlate: %v\n", err)
		return exitUsage
	}

	var ws []report.Writer
	switch cfg.format {
	case "json":
		ws = append(ws, report.NewJSON(stdout))
	case "table":
		ws = append(ws, report.NewTableWith(stdout, report.Options{Width: report.OutputWidth(stdout, os.Getenv("COLUMNS"))}))
	default:
		ws = append(ws, report.NewLines(stdout))
	}
	var exporter *metrics.Exporter
	if cfg.metricsAddr != "" {
		m, srv, at, code := serveMetrics(cfg.metricsAddr, nil, stderr)
		if code != exitOK {
			return code
		}
		defer srv.Close()
		exporter = m
		ws = append(ws, m)
		fmt.Fprintf(stderr, "kdupcap: metrics on http://%s/metrics\n", at)
	}
	var emitter *emit.Kafka
	if cfg.emit != "" {
		if emitter, err = newEmitter(cfg.emit, co); err != nil {
			fmt.Fprintf(stderr, "kdupcap: --emit %s: %v\n", cfg.emit, err)
			return exitUsage
		}
		ws = append(ws, emitter)
	}
	out := report.Multi(ws...)

	seeds, topic, _ := emit.ParseURL(cfg.from)
	src, err := fleet.NewConsumer(fleet.ConsumerOptions{Seeds: seeds, Topic: topic, Group: cfg.group, Client: co,
		Merge: fleet.MergeOptions{Lateness: cfg.lateness}, Window: cfg.opts.Window})
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap correlate: --from: %v\n", err)
		return exitUsage
	}
	var writeErr error
	o := cfg.opts
	o.OnFinding = func(f detect.Finding) {
		if err := out.Finding(f); err != nil && writeErr == nil {
			writeErr = err
			fmt.Fprintf(stderr, "kdupcap: writing a finding: %v\n", err)
		}
	}
	var run *pipeline.Correlate
	next := time.Now().Add(metricsEvery)
	o.OnTick = func(now time.Time) {
		if exporter != nil && now.After(next) {
			exporter.Update(run.Counters())
			next = now.Add(metricsEvery)
		}
	}
	run = pipeline.NewCorrelate(o, src)
	fmt.Fprintf(stderr, "kdupcap: correlating attempts from %s as group %s\n", cfg.from, cfg.group)
	rerr := run.Run(ctx)
	if rerr != nil {
		fmt.Fprintf(stderr, "kdupcap: reading %s: %v\n", cfg.from, rerr)
	}
	run.Finish()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	src.Close(cctx)
	cancel()
	if exporter != nil {
		exporter.Update(run.Counters())
	}
	if err := writeProducers(out, run.Producers(), run.Timeline); err != nil && writeErr == nil {
		writeErr = err
	}
	cs := src.Stats()
	sum := run.Summary(cfg.from, report.FleetSummary{Source: cfg.from, Group: cfg.group, Lateness: cfg.lateness,
		Records: cs.Records, Malformed: cs.Malformed, Partitions: cs.Assigned, Revoked: cs.Revoked, Errors: cs.Errors})
	if sig := stoppedBy(ctx); sig != nil {
		sum.Interrupted = signalName(sig)
	}
	if err := out.Summary(sum); err != nil && writeErr == nil {
		writeErr = err
	}
	ok := true
	if emitter != nil {
		ectx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := emitter.Close(ectx); err != nil {
			fmt.Fprintf(stderr, "kdupcap: --emit: %v\n", err)
			ok = false
		}
		cancel()
	}
	switch {
	case writeErr != nil:
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", writeErr)
		return exitFailure
	case !ok:
		return exitFailure
	case rerr != nil:
		return exitUsage
	}
	return exitOK
}
