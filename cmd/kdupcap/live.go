package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"

	"github.com/kdupcap/kdupcap/capture/live"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/emit"
	"github.com/kdupcap/kdupcap/report/html"
	"github.com/kdupcap/kdupcap/report/metrics"
)

// Defaults of the live flags.
const (
	// metricsEvery is how often the metrics counters are brought up to date.
	metricsEvery = time.Second
)

// liveConfig holds the live flags: the run's options and its sinks.
type liveConfig struct {
	opts        pipeline.LiveOptions
	iface       string
	format      string
	metricsAddr string
	emit        string
	user        string
	statsEvery  time.Duration
	snapLen     int
	ringMB      int
	// attempts and kafka: --attempts, --host and the --kafka-* options
	// of it and of --emit (correlate_kafka.go).
	attempts *attemptsFlags
	kafka    *kafkaFlags
}

// parseLiveFlags reads live's arguments into a config. Its errors are one
// line that ends with where the help is; --help writes the help to stdout
// and returns flag.ErrHelp.
func parseLiveFlags(args []string, stdout io.Writer, stderrIsTerminal bool) (*liveConfig, error) {
	cfg := &liveConfig{}
	fs, sf := liveFlags(cfg, stderrIsTerminal)
	cfg, err := cfg.read(fs, sf, args, stdout)
	return cfg, seeHelp(fs, err)
}

// liveFlags defines live's flags into cfg on a new FlagSet: the one set
// that parses them, and that the help, the completions and the man page
// are written from. --stats-every's default is 10s when stderr is a
// terminal.
func liveFlags(cfg *liveConfig, stderrIsTerminal bool) (*flag.FlagSet, *stageFlags) {
	fs := newFlagSet("kdupcap live")
	fs.StringVar(&cfg.iface, "i", "", "`INTERFACE` to capture on, or \"any\" for all of them (required)")
	choiceVar(fs, &cfg.format, "format", "lines", []string{"lines", "json"}, "output format: lines (one line per finding) or json (JSON Lines, as analyze)")
	fs.StringVar(&cfg.metricsAddr, "metrics", "", "serve Prometheus metrics on `ADDR` (e.g. :9464) at /metrics, and the HTML report of the run so far at /report")
	fs.StringVar(&cfg.emit, "emit", "", "also publish every finding as a JSON record to `kafka://HOST:PORT[,HOST:PORT]/TOPIC`")
	o := &cfg.opts
	sf := addStageFlags(fs, &o.Options, stageUsage{port: "comma-separated broker `PORTS` to capture (the kernel filter keeps only these)",
		window: "how long a batch is remembered after its last attempt", idle: "time after which an idle TCP connection is closed",
		recordsMore: " (shown by --format json)", keylogMore: "; followed as it grows"})
	fs.StringVar(&o.EvidenceDir, "evidence", "", "write the packets of every finding's attempts and responses to a pcap in `DIR`")
	fs.StringVar(&cfg.user, "user", "", "drop root privileges to `USER` once the capture socket is open (as tcpdump -Z)")
	durationVar(fs, &o.Duration, "duration", 0, 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	intVar(fs, &o.Count, "count", 0, 0, math.MaxInt, "stop after this many findings (0: no limit)")
	defaultStats := time.Duration(0)
	if stderrIsTerminal {
		defaultStats = 10 * time.Second
	}
	durationVar(fs, &cfg.statsEvery, "stats-every", defaultStats, 0, "print a status line on stderr this often (0: never; default 10s on a terminal)")
	intVar(fs, &cfg.snapLen, "snaplen", live.DefaultSnapLen, 1, live.MaxSnapLen, "bytes kept of each packet")
	intVar(fs, &cfg.ringMB, "ring-mb", live.DefaultRingBytes>>20, 1, maxRingMB, "size of the kernel ring in MiB")
	durationVar(fs, &o.Settle, "settle", detect.DefaultSettle, time.Nanosecond, "how long to wait for a retry after an attempt answered with a retriable error (or not at all) before reporting")
	cfg.attempts, cfg.kafka = addAttemptsFlags(fs), addKafkaFlags(fs)
	return fs, sf
}

// maxRingMB bounds --ring-mb: 4 GiB of kernel memory is more than any
// sniffer needs, and more than the ring's block count can address.
const maxRingMB = 4096

// read parses args with fs and sf, liveFlags' of cfg, and checks them.
func (cfg *liveConfig) read(fs *flag.FlagSet, sf *stageFlags, args []string, stdout io.Writer) (*liveConfig, error) {
	if err := fs.Parse(args); err != nil {
		return nil, parseFailed(fs, err, stdout)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %s (live reads an interface, not files: see kdupcap analyze)", quoteArg(fs.Arg(0)))
	}
	if cfg.iface == "" {
		return nil, errors.New("-i INTERFACE is required")
	}
	if err := sf.check(); err != nil {
		return nil, err
	}
	o := &cfg.opts
	o.Name = "live:" + cfg.iface
	if cfg.emit != "" {
		if _, _, err := emit.ParseURL(cfg.emit); err != nil {
			return nil, err
		}
	}
	if err := cfg.attempts.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// isTerminal reports whether w is a terminal (a character device such as
// /dev/null is not).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runLiveCLI is `kdupcap live`: runLive stopped by SIGINT or SIGTERM.
func runLiveCLI(args []string, stdout, stderr io.Writer) int {
	ctx, stop := stopContext(context.Background())
	defer stop()
	return runLive(ctx, args, stdout, stderr)
}

// liveRun is the state of one live run's sinks; the run itself is a
// pipeline.Live.
type liveRun struct {
	cfg     *liveConfig
	stdout  io.Writer
	stderr  io.Writer
	run     *pipeline.Live
	out     report.Writer
	metrics *metrics.Exporter
	emitter *emit.Kafka
	server  *http.Server // of the metrics, closed by closeSinks
	report  *liveReport  // the server's /report

	// pub publishes the attempts (--attempts).
	pub *attemptsPublisher

	writeErr    error
	start       time.Time
	nextMetrics time.Time
	nextStatus  time.Time
}

// runLive captures until ctx is done, --duration passes or --count findings
// were reported, then flushes, prints the summary and returns the exit code.
func runLive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseLiveFlags(args, stdout, isTerminal(stderr))
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap live: %v\n", err)
		return exitUsage
	}
	r := &liveRun{cfg: cfg, stdout: stdout, stderr: stderr}

	src, err := live.Open(live.Options{
		Interface: cfg.iface,
		Ports:     cfg.opts.Ports,
		SnapLen:   cfg.snapLen,
		RingBytes: cfg.ringMB << 20,
	})
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: %v\n", err)
		return exitUsage
	}
	defer src.Close()
	if cfg.user != "" {
		if err := live.DropPrivileges(cfg.user); err != nil {
			fmt.Fprintf(stderr, "kdupcap: %v\n", err)
			return exitUsage
		}
	}
	// As the user that writes it, before the first packet: not at the
	// first finding.
	if dir := cfg.opts.EvidenceDir; dir != "" {
		if err := pipeline.CheckEvidenceDir(dir); err != nil {
			fmt.Fprintf(stderr, "kdupcap live: --evidence: %v\n", err)
			return exitUsage
		}
	}
	code := r.openSinks()
	defer r.closeSinks() // on an early return; a second close does nothing
	if code != exitOK {
		return code
	}

	o := cfg.opts
	if r.pub, code = openAttempts(cfg.attempts, cfg.kafka, o.Options, stderr); code != exitOK {
		return code
	}
	defer r.pub.release() // on an early return; closeAttempts closes it else
	if r.pub != nil {
		o.Attempts = r.pub
	}
	o.Ignore = ownConns(r.ownEmit(), r.ownAttempts())
	o.OnFinding, o.Observe, o.OnTick, o.Warnings = r.finding, r.exchange, r.tick, stderr
	if r.run, err = pipeline.NewLive(o, src); err != nil {
		fmt.Fprintf(stderr, "kdupcap: --evidence: %v\n", err)
		return exitUsage
	}
	r.start = time.Now()
	r.nextMetrics, r.nextStatus = r.start.Add(metricsEvery), r.start.Add(cfg.statsEvery)
	err = r.run.Run(ctx)
	if r.report != nil {
		r.report.end()
	}
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: reading %s: %v\n", cfg.iface, err)
	}

	r.run.Finish()
	r.updateMetrics()
	if err := writeProducers(r.out, r.run.Producers(), r.run.Timeline); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	sum := r.run.Summary()
	pubFailed := closeAttempts(r.pub, &sum, stderr)
	if err := r.out.Summary(sum); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	for _, e := range r.run.Errors() {
		fmt.Fprintf(stderr, "kdupcap: warning: %s\n", e)
	}
	// The emitter's last records (the summary at least) are delivered or
	// fail here: a failure is a failed output, as one on stdout.
	if !r.closeSinks() && r.writeErr == nil {
		return exitFailure
	}
	if r.writeErr != nil {
		fmt.Fprintf(stderr, "kdupcap: writing output: %v\n", r.writeErr)
		return exitFailure
	}
	if pubFailed {
		return exitFailure
	}
	return exitOK
}

// openSinks sets up the writers: stdout, then metrics and the Kafka emitter
// when asked for.
func (r *liveRun) openSinks() int {
	cfg := r.cfg
	var ws []report.Writer
	if cfg.format == "json" {
		ws = append(ws, report.NewJSON(r.stdout))
	} else {
		ws = append(ws, report.NewLines(r.stdout))
	}
	if cfg.metricsAddr != "" {
		st := html.NewStore(html.StoreOptions{Options: html.Options{Title: "kdupcap live report"}})
		page := newLiveReport(st)
		m, srv, at, code := serveMetrics(cfg.metricsAddr, map[string]http.Handler{"/report": page}, r.stderr)
		if code != exitOK {
			return code
		}
		r.server, r.metrics, r.report = srv, m, page
		ws = append(ws, m, st)
		fmt.Fprintf(r.stderr, "kdupcap: metrics on http://%s/metrics, report on http://%s/report\n", at, at)
	}
	if cfg.emit != "" {
		co, err := cfg.kafka.options()
		if err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: %v\n", err)
			return exitUsage
		}
		k, err := newEmitter(cfg.emit, co)
		if err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: --emit %s: %v\n", cfg.emit, err)
			return exitUsage
		}
		r.emitter = k
		ws = append(ws, k)
	}
	r.out = report.Multi(ws...)
	return exitOK
}

// serveMetrics serves, for live and correlate's --metrics, a new
// Prometheus exporter at /metrics on addr, and each of pages at its path,
// until the server returned is closed; it returns the address it listens
// on. When it cannot, it says why on stderr and returns the exit code to
// stop with (else exitOK).
func serveMetrics(addr string, pages map[string]http.Handler, stderr io.Writer) (*metrics.Exporter, *http.Server, net.Addr, int) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: metrics: %v\n", err)
		return nil, nil, nil, exitFailure
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: --metrics %s: %v\n", addr, err)
		return nil, nil, nil, exitUsage
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	for path, h := range pages {
		mux.Handle(path, h)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return m, srv, ln.Addr(), exitOK
}

// closeSinks stops the metrics endpoint and delivers the emitter's last
// records, reporting false if some failed (said on stderr). A second call
// does nothing and reports true.
func (r *liveRun) closeSinks() bool {
	if r.report != nil {
		r.report.end()
	}
	if r.server != nil {
		r.server.Close()
		r.server = nil
	}
	ok := true
	if r.emitter != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.emitter.Close(ctx); err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: --emit: %v\n", err)
			ok = false
		}
		r.emitter = nil
	}
	return ok
}

// finding writes every report of a finding to every sink at once.
func (r *liveRun) finding(f detect.Finding) {
	if err := r.out.Finding(f); err != nil && r.writeErr == nil {
		r.writeErr = err
		fmt.Fprintf(r.stderr, "kdupcap: writing a finding: %v\n", err)
	}
}

// exchange feeds produce latency to the metrics.
func (r *liveRun) exchange(x *decode.Exchange) {
	if r.metrics == nil || !x.Responded || len(x.Batches) == 0 {
		return
	}
	r.metrics.ObserveProduceLatency(x.Batches[0].Topic, x.ResponseTime.Sub(x.RequestTime).Seconds())
}

// tick brings the metrics up to date every metricsEvery, prints a status
// line every --stats-every and answers the requests for /report.
func (r *liveRun) tick(now time.Time) {
	if r.report != nil {
		r.report.answer(r.reportPage)
	}
	if now.After(r.nextMetrics) {
		r.updateMetrics()
		r.nextMetrics = now.Add(metricsEvery)
	}
	if r.cfg.statsEvery > 0 && now.After(r.nextStatus) {
		fmt.Fprintln(r.stderr, report.StatusLine(r.run.Counters(), r.run.Stats().ByVerdict, now.Sub(r.start)))
		r.nextStatus = now.Add(r.cfg.statsEvery)
	}
}

func (r *liveRun) updateMetrics() {
	if r.metrics != nil {
		r.metrics.Update(r.run.Counters())
	}
}
