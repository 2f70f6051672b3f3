package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/capture/live"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// Defaults of the live flags.
const (
	defaultSettle     = 30 * time.Second
	defaultLiveWindow = 10 * time.Minute
	// evidenceMargin widens a finding's time span for its evidence pcap, so
	// that the first attempt's earlier segments are in it too.
	evidenceMargin = 200 * time.Millisecond
	// metricsEvery is how often the metrics counters are brought up to date.
	metricsEvery = time.Second
)

// liveConfig holds the live flags.
type liveConfig struct {
	iface       string
	ports       []uint16
	format      string
	metricsAddr string
	emit        string
	evidenceDir string
	user        string
	duration    time.Duration
	count       int
	records     int
	recordMatch bool
	appDups     bool
	statsEvery  time.Duration
	snapLen     int
	ringMB      int
	window      time.Duration
	maxBatches  int
	settle      time.Duration
	idleTimeout time.Duration
	scope       detect.Scope
}

func parseLiveFlags(args []string, stderr io.Writer, stderrIsTerminal bool) (*liveConfig, error) {
	cfg := &liveConfig{}
	fs := flag.NewFlagSet("kdupcap live", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: kdupcap live -i INTERFACE [flags]\n\n"+
			"Sniffs Kafka traffic on a live interface (Linux AF_PACKET; needs root or\n"+
			"CAP_NET_RAW) and reports re-sent produce batches as soon as they are decided.\n"+
			"SIGINT or SIGTERM flushes what is pending, prints a profile per producer\n"+
			"(settings, latency per broker, re-sends, diagnosis) and the summary, and exits 0.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.iface, "i", "", "interface to capture on, or \"any\" for all of them (required)")
	ports := fs.String("port", "9092", "comma-separated broker ports to capture (the kernel filter keeps only these)")
	fs.StringVar(&cfg.format, "format", "lines", "output format: lines (one line per finding) or json (JSON Lines, as analyze)")
	fs.StringVar(&cfg.metricsAddr, "metrics", "", "serve Prometheus metrics on ADDR (e.g. :9464) at /metrics")
	fs.StringVar(&cfg.emit, "emit", "", "also publish every finding as a JSON record to kafka://HOST:PORT[,HOST:PORT]/TOPIC")
	fs.StringVar(&cfg.evidenceDir, "evidence", "", "write the packets of every finding's attempts and responses to a pcap in DIR")
	fs.StringVar(&cfg.user, "user", "", "drop root privileges to this user once the capture socket is open (as tcpdump -Z)")
	fs.DurationVar(&cfg.duration, "duration", 0, "stop after this long (0: run until SIGINT or SIGTERM)")
	fs.IntVar(&cfg.count, "count", 0, "stop after this many findings (0: no limit)")
	defaultStats := time.Duration(0)
	if stderrIsTerminal {
		defaultStats = 10 * time.Second
	}
	fs.DurationVar(&cfg.statsEvery, "stats-every", defaultStats, "print a status line on stderr this often (0: never; default 10s on a terminal)")
	fs.IntVar(&cfg.snapLen, "snaplen", live.DefaultSnapLen, "bytes kept of each packet")
	fs.IntVar(&cfg.ringMB, "ring-mb", live.DefaultRingBytes>>20, "size of the kernel ring in MiB")
	fs.DurationVar(&cfg.window, "window", defaultLiveWindow, "how long a batch is remembered after its last attempt")
	fs.IntVar(&cfg.maxBatches, "max-batches", detect.DefaultMaxBatches, maxBatchesUsage)
	fs.DurationVar(&cfg.settle, "settle", defaultSettle, "how long to wait for a retry after an attempt answered with a retriable error (or not at all) before reporting")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", defaultIdleTimeout, "time after which an idle TCP connection is closed")
	scope := fs.String("scope", "both", scopeUsage)
	fs.IntVar(&cfg.records, "records", 0, recordsUsage+" (shown by --format json)")
	fs.BoolVar(&cfg.recordMatch, "record-match", true, recordMatchUsage)
	fs.BoolVar(&cfg.appDups, "app-duplicates", false, appDuplicatesUsage)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (live reads an interface, not files: see kdupcap analyze)", fs.Arg(0))
	}
	if cfg.iface == "" {
		fs.Usage()
		return nil, errors.New("-i INTERFACE is required")
	}
	switch cfg.format {
	case "lines", "json":
	default:
		return nil, fmt.Errorf("--format %q: want lines or json", cfg.format)
	}
	var err error
	if cfg.ports, err = parsePorts(*ports); err != nil {
		return nil, err
	}
	if cfg.window <= 0 || cfg.settle <= 0 || cfg.idleTimeout <= 0 || cfg.duration < 0 || cfg.count < 0 || cfg.statsEvery < 0 {
		return nil, errors.New("--window, --settle and --idle-timeout must be positive; --duration, --count and --stats-every not negative")
	}
	if cfg.ringMB <= 0 || cfg.snapLen <= 0 {
		return nil, errors.New("--ring-mb and --snaplen must be positive")
	}
	if cfg.scope, err = parseScope(*scope); err != nil {
		return nil, err
	}
	if err := checkRecords(cfg.records); err != nil {
		return nil, err
	}
	if cfg.emit != "" {
		if _, _, err := report.ParseEmitURL(cfg.emit); err != nil {
			return nil, err
		}
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

// stopContext is done at the first SIGINT or SIGTERM; the signals then get
// their default action back, so that a second one ends the process while
// the first one's flush is still running (a hung emitter, a slow disk).
func stopContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
		}
		// The default action is back before the run can see it must stop,
		// so a second signal during the flush is never swallowed.
		signal.Stop(sigs)
		cancel()
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// liveRun is the state of one live run.
type liveRun struct {
	cfg      *liveConfig
	stdout   io.Writer
	stderr   io.Writer
	src      *live.Source
	p        *pipeline
	out      report.Writer
	metrics  *report.Metrics
	emitter  *report.Kafka
	evidence *capture.Evidence
	server   *http.Server // of the metrics, closed by closeSinks
	// prof profiles the producers from every exchange and every report of
	// a finding, printed after the last finding (producers.go).
	prof *detect.Profiler

	findings   int // first reports, for --count
	writeErr   error
	toEvidence []detect.Finding // decided during the last Add, written after it
	drops      uint64           // kernel drops seen so far
	dropTimes  []time.Time      // when the drop count was seen to grow
}

// runLive captures until ctx is done, --duration passes or --count findings
// were reported, then flushes, prints the summary and returns the exit code.
func runLive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseLiveFlags(args, stderr, isTerminal(stderr))
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap live: %v\n", err)
		return exitUsage
	}
	r := &liveRun{cfg: cfg, stdout: stdout, stderr: stderr, prof: liveProfiler(cfg)}

	r.src, err = live.Open(live.Options{
		Interface: cfg.iface,
		Ports:     cfg.ports,
		SnapLen:   cfg.snapLen,
		RingBytes: cfg.ringMB << 20,
	})
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: %v\n", err)
		return exitUsage
	}
	defer r.src.Close()
	if cfg.user != "" {
		if err := live.DropPrivileges(cfg.user); err != nil {
			fmt.Fprintf(stderr, "kdupcap: %v\n", err)
			return exitUsage
		}
	}
	code := r.openSinks()
	defer r.closeSinks() // on an early return; a second close does nothing
	if code != exitOK {
		return code
	}

	var ignore func(a, b netip.AddrPort) bool
	if r.emitter != nil {
		ignore = r.ignore
	}
	r.p = newPipeline(pipelineOptions{
		ports:       cfg.ports,
		window:      cfg.window,
		maxBatches:  cfg.maxBatches,
		idleTimeout: cfg.idleTimeout,
		scope:       cfg.scope,
		records:     cfg.records,
		recordMatch: cfg.recordMatch,
		allRecords:  cfg.appDups,
		live:        true,
		settle:      cfg.settle,
		onFinding:   r.finding,
		observe:     r.observe,
		ignore:      ignore,
		evidence:    r.evidence,
	})
	r.loop(ctx)

	// Flush what is pending: the decoder marks unanswered requests as cut by
	// the end of the capture, detect reports the findings not yet reported.
	r.p.finish()
	r.writeEvidence()
	r.updateMetrics()
	if err := writeProducers(r.out, r.prof); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	sum := r.p.summary([]string{"live:" + cfg.iface}, nil)
	sum.Drops = int64(r.src.Stats().Drops)
	sum.ProducerExchangesOmitted = r.prof.Omitted()
	if err := r.out.Summary(sum); err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	for _, e := range r.p.dec.Errors() {
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
		reg := prometheus.NewRegistry()
		m, err := report.NewMetrics(reg, report.MetricsOptions{})
		if err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: metrics: %v\n", err)
			return exitFailure
		}
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: --metrics %s: %v\n", cfg.metricsAddr, err)
			return exitUsage
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		r.server = srv
		r.metrics = m
		ws = append(ws, m)
		fmt.Fprintf(r.stderr, "kdupcap: metrics on http://%s/metrics\n", ln.Addr())
	}
	if cfg.emit != "" {
		seeds, topic, _ := report.ParseEmitURL(cfg.emit)
		k, err := report.NewKafka(seeds, topic)
		if err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: --emit %s: %v\n", cfg.emit, err)
			return exitUsage
		}
		r.emitter = k
		ws = append(ws, k)
	}
	if cfg.evidenceDir != "" {
		if err := os.MkdirAll(cfg.evidenceDir, 0o755); err != nil {
			fmt.Fprintf(r.stderr, "kdupcap: --evidence: %v\n", err)
			return exitUsage
		}
		r.evidence = capture.NewEvidence(capture.EvidenceOptions{})
	}
	r.out = report.Multi(ws...)
	return exitOK
}

// closeSinks stops the metrics endpoint and delivers the emitter's last
// records, reporting false if some failed (said on stderr). A second call
// does nothing and reports true.
func (r *liveRun) closeSinks() bool {
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

// loop reads packets until it must stop. Without traffic the ring answers
// ErrTimeout every poll interval, and the wall clock moves the pipeline's
// time on, so that findings waiting for a retry are still decided.
func (r *liveRun) loop(ctx context.Context) {
	start := time.Now()
	var deadline time.Time
	if r.cfg.duration > 0 {
		deadline = start.Add(r.cfg.duration)
	}
	nextMetrics := start.Add(metricsEvery)
	nextStatus := start.Add(r.cfg.statsEvery)
	sinceDropCheck := 0
	for {
		if ctx.Err() != nil || (r.cfg.count > 0 && r.findings >= r.cfg.count) {
			return
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return
		}
		pkt, err := r.src.Next()
		switch {
		case err == nil:
			r.p.asm.Add(pkt)
			sinceDropCheck++
		case errors.Is(err, live.ErrTimeout):
			r.p.asm.Tick(now)
			r.p.det.Advance(now)
			sinceDropCheck = dropCheckEvery
		default:
			fmt.Fprintf(r.stderr, "kdupcap: reading %s: %v\n", r.cfg.iface, err)
			return
		}
		r.writeEvidence()
		// Reading the kernel's counters is a system call: not per packet.
		if sinceDropCheck >= dropCheckEvery {
			sinceDropCheck = 0
			r.checkDrops(now)
		}
		if now.After(nextMetrics) {
			r.updateMetrics()
			nextMetrics = now.Add(metricsEvery)
		}
		if r.cfg.statsEvery > 0 && now.After(nextStatus) {
			fmt.Fprintln(r.stderr, report.StatusLine(r.counters(), r.p.det.Stats().ByVerdict, now.Sub(start)))
			nextStatus = now.Add(r.cfg.statsEvery)
		}
	}
}

// dropCheckEvery is how many packets pass between two readings of the
// kernel's drop counter (and at every idle poll): the resolution with which a
// finding is said to cross a drop.
const dropCheckEvery = 256

// checkDrops notes when the kernel's drop count was seen to grow.
func (r *liveRun) checkDrops(now time.Time) {
	d := r.src.Stats().Drops
	if d <= r.drops {
		return
	}
	r.drops = d
	r.dropTimes = append(r.dropTimes, now)
	if len(r.dropTimes) > maxDropTimes {
		r.dropTimes = append(r.dropTimes[:0], r.dropTimes[len(r.dropTimes)-maxDropTimes:]...)
	}
}

// maxDropTimes bounds the drop times remembered for crossesDrop.
const maxDropTimes = 1024

// finding is detect's OnFinding: write the finding to every sink at once.
func (r *liveRun) finding(f detect.Finding) {
	if r.crossesDrop(f) {
		f.Reason += "; the kernel dropped packets while it was sent: evidence may be missing"
	}
	if f.Revision == 0 {
		r.findings++
	}
	r.prof.Finding(&f)
	if err := r.out.Finding(f); err != nil && r.writeErr == nil {
		r.writeErr = err
		fmt.Fprintf(r.stderr, "kdupcap: writing a finding: %v\n", err)
	}
	if r.evidence != nil {
		r.toEvidence = append(r.toEvidence, f)
	}
}

// crossesDrop says whether the kernel was seen dropping packets during the
// finding's span (to the resolution of the read loop).
func (r *liveRun) crossesDrop(f detect.Finding) bool {
	if len(r.dropTimes) == 0 || len(f.Attempts) == 0 {
		return false
	}
	from, to := findingSpan(f)
	for _, t := range r.dropTimes {
		if !t.Before(from) && !t.After(to.Add(evidenceMargin)) {
			return true
		}
	}
	return false
}

// findingSpan is the time from the finding's first attempt to its last
// answer (or last attempt).
func findingSpan(f detect.Finding) (from, to time.Time) {
	from = f.Attempts[0].Time
	for _, a := range f.Attempts {
		if a.Time.After(to) {
			to = a.Time
		}
		if a.Response != nil && a.Response.Time.After(to) {
			to = a.Response.Time
		}
	}
	return from, to
}

// writeEvidence writes the pcap of every finding decided since the last call:
// after the packet that decided it was recorded.
func (r *liveRun) writeEvidence() {
	for _, f := range r.toEvidence {
		from, to := findingSpan(f)
		name := fmt.Sprintf("finding-%s-%s-%d-conn%d-corr%d.pcap", f.Attempts[0].Time.UTC().Format("20060102T150405.000000000Z"),
			safeName(f.Topic), f.Partition, f.ConnID, f.Attempts[0].CorrelationID)
		path := filepath.Join(r.cfg.evidenceDir, name)
		// A finding re-sent across connections gets the packets of all of
		// them, merged by time, in its one file.
		var conns []capture.Endpoints
		for _, at := range f.Attempts {
			e := capture.Endpoints{A: at.Client, B: at.Broker}
			if !at.Client.IsValid() {
				e = capture.Endpoints{A: f.Client, B: f.Broker}
			}
			if !slices.Contains(conns, e) {
				conns = append(conns, e)
			}
		}
		err := r.writeEvidenceFile(path, conns, from.Add(-evidenceMargin), to.Add(evidenceMargin))
		switch {
		case errors.Is(err, capture.ErrEvidenceEvicted):
			fmt.Fprintf(r.stderr, "kdupcap: evidence %s is partial: older packets of its connections were evicted to bound memory\n", path)
		case err != nil:
			fmt.Fprintf(r.stderr, "kdupcap: evidence %s: %v\n", path, err)
		}
	}
	r.toEvidence = r.toEvidence[:0]
}

func (r *liveRun) writeEvidenceFile(path string, conns []capture.Endpoints, from, to time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, werr := r.evidence.WritePcapConns(f, conns, from, to)
	if err := f.Close(); werr == nil {
		werr = err
	}
	return werr
}

// safeName keeps a topic name usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// observe feeds every produce exchange to the producer profiles, and
// produce latency to the metrics.
func (r *liveRun) observe(x *decode.Exchange) {
	r.prof.Produce(x)
	if r.metrics == nil || !x.Responded || len(x.Batches) == 0 {
		return
	}
	r.metrics.ObserveProduceLatency(x.Batches[0].Topic, x.ResponseTime.Sub(x.RequestTime).Seconds())
}

// ignore keeps kdupcap's own emission traffic out of the analysis.
func (r *liveRun) ignore(a, b netip.AddrPort) bool {
	return r.emitter != nil && r.emitter.IsOwnConn(a, b)
}

func (r *liveRun) updateMetrics() {
	if r.metrics != nil {
		r.metrics.Update(r.counters())
	}
}

// counters gathers the cumulative counts of every stage.
func (r *liveRun) counters() report.Counters {
	cs := r.p.asm.Stats()
	ds := r.p.dec.Stats()
	ts := r.p.det.Stats()
	ls := r.src.Stats()
	return report.Counters{
		Packets:            cs.Packets,
		Bytes:              cs.Bytes,
		Drops:              int64(ls.Drops),
		KernelPackets:      int64(ls.Packets),
		ProduceRequests:    ds.ProduceRequests,
		ProduceResponses:   ds.ProduceResponses,
		Batches:            ds.Batches,
		Records:            ds.Records,
		Malformed:          ds.Malformed,
		Gaps:               cs.Gaps,
		Connections:        ds.Connections,
		EvictedConnections: cs.IdleClosed,
		EvictedBatches:     ts.Evicted + ts.Expired,
		EvictedPending:     ds.Evicted,
		Topics:             topicCounts(ts),
	}
}
