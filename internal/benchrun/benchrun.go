package benchrun

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

// Tool names as they appear in the table. The read loop is pcapgo's
// ReadPacketData, the limit the issue names; the zero-copy one reads as
// kdupcap's capture.Source does, without a copy per packet.
const (
	ToolReadLoop         = "read loop"
	ToolReadLoopZeroCopy = "read loop, zero-copy"
	// ToolAnalyzeOne is analyze --workers 1, everything on one goroutine;
	// ToolAnalyze is analyze at its default settings.
	ToolAnalyzeOne = "analyze --workers 1"
	ToolAnalyze    = "analyze"
	// ToolAnalyzeOnePair is two analyze --workers 1 of the file at once,
	// on a capture of real clients: how much two such runs gain from the
	// second core on this machine (the caches, memory and host they
	// share), the most a split of one run onto two goroutines could gain.
	// Its size and packets are the two runs': its throughput theirs.
	ToolAnalyzeOnePair = "2 x analyze --workers 1 at once"
	ToolTshark         = "tshark"
	// ToolZstd and ToolGzip decompress a compressed capture to /dev/null,
	// what analyze of that file is compared with.
	ToolZstd = "zstd -dc"
	ToolGzip = "gzip -dc"
)

// Config says what to run.
type Config struct {
	ReadLoop string // readloop binary
	Kdupcap  string // kdupcap binary
	Tshark   string // tshark binary; empty: skip it
	Port     uint16 // broker port of the generated captures (a manifest's Port wins)
	// Zstd and Gzip are the decompressors a compressed capture's analyze
	// is compared with; empty: that codec's files fail.
	Zstd, Gzip string
	// OneWorker runs analyze --workers 1 too, beside the default.
	OneWorker bool
	// AnalyzeArgs are more flags for analyze (such as --window 1m).
	AnalyzeArgs []string
	Runs        int // runs of read loop and analyze; the median wall time counts
	// TsharkMaxBytes skips tshark on larger files (0: no limit); it runs
	// about 30 times slower than analyze.
	TsharkMaxBytes int64
	// MaxRSS fails the bench when analyze's peak RSS exceeds it (0: no
	// limit): memory must not grow with the file.
	MaxRSS int64
	Log    io.Writer // progress lines; nil: none
}

// Measure is one tool on one file.
type Measure struct {
	File string
	Size int64 // bytes of the file
	Tool string
	Wall time.Duration // median of the runs
	// CPU is user plus system time of the run with the median wall time:
	// steadier than Wall on a machine other work shares.
	CPU     time.Duration
	Packets int64 // packets in the file (from the read loop)
	PeakRSS int64 // bytes, the largest of the runs
	Runs    int
	Note    string
	// TLS says the file's connections are TLS (its manifest's Config.TLS),
	// analyzed decrypted; MTU is the manifest's, to pair a TLS file with
	// the plaintext one of the same segments in Ratios.
	TLS bool
	MTU int
	// Real says the file is a capture of real clients (its manifest's
	// Source): the targets are checked on it (Ratios).
	Real bool
	// Codec is "zst" or "gz" for a compressed capture, else "".
	Codec string
}

// MBps is the file's size in MB (10^6 bytes) over the wall time.
func (m Measure) MBps() float64 { return float64(m.Size) / 1e6 / m.Wall.Seconds() }

// CPUMBps is the file's size in MB over the CPU time.
func (m Measure) CPUMBps() float64 { return float64(m.Size) / 1e6 / m.CPU.Seconds() }

// PacketsPerSec is the file's packets over the wall time.
func (m Measure) PacketsPerSec() float64 { return float64(m.Packets) / m.Wall.Seconds() }

// run is one finished process.
type run struct {
	wall   time.Duration
	cpu    time.Duration
	maxRSS int64
	stdout []byte
}

// runProcess runs name with args and measures it. Its stdout is kept when
// keepStdout, else only its lines are counted (the count is returned);
// its stderr is kept for the error.
func runProcess(name string, args []string, keepStdout bool) (run, int64, error) {
	return runTo(name, args, keepStdout, nil)
}

// runTo is runProcess writing stdout to devNull when not nil, as a shell's
// `>/dev/null` does: no pipe to read.
func runTo(name string, args []string, keepStdout bool, devNull *os.File) (run, int64, error) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	lines := &lineCounter{}
	switch {
	case devNull != nil:
		cmd.Stdout = devNull
	case keepStdout:
		cmd.Stdout = &out
	default:
		cmd.Stdout = lines
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return run{}, 0, fmt.Errorf("%s %v: %w: %s", filepath.Base(name), args, err, firstLines(stderr.Bytes(), 5))
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return run{wall: wall, cpu: cpu, maxRSS: rss, stdout: out.Bytes()}, lines.n, nil
}

// lineCounter counts newlines written to it and keeps nothing.
type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

func firstLines(b []byte, n int) string {
	lines := bytes.SplitN(b, []byte{'\n'}, n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return string(bytes.Join(lines, []byte{'\n'}))
}

// Codecs of compressed captures, by file name suffix: a compressed capture
// FILE.zst or FILE.gz is measured against its decompressor, FILE's manifest
// its ground truth.
var codecSuffixes = map[string]string{".zst": "zst", ".gz": "gz"}

// codecOf returns the codec of a compressed capture's path and the path of
// the capture it compresses, or "" and path.
func codecOf(path string) (codec, plain string) {
	for suf, c := range codecSuffixes {
		if strings.HasSuffix(path, suf) {
			return c, strings.TrimSuffix(path, suf)
		}
	}
	return "", path
}

// tool is one program File measures on a file, a run each round.
type tool struct {
	name string
	bin  string
	args []string
	// devNull sends stdout to /dev/null; else check, if set, reads it.
	devNull bool
	// pair runs two at once, each checked; the wall time is until both
	// end, the CPU time both's.
	pair  bool
	check func(stdout []byte) error
	runs  []run
}

// File measures every tool on path, whose manifest lies beside it, and
// checks analyze's findings against the manifest: an error if they differ.
// A capture (pcap or pcapng) gets the read loops, analyze --workers 1
// (Config.OneWorker), analyze and tshark; a compressed one (FILE.zst,
// FILE.gz; FILE's manifest) its decompressor to /dev/null and analyze.
func File(cfg Config, path string) ([]Measure, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	codec, plain := codecOf(path)
	mf, err := os.Open(gencap.ManifestPath(plain))
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", path, err)
	}
	m, err := gencap.ReadManifest(mf)
	mf.Close()
	if err != nil {
		return nil, err
	}
	runs := max(cfg.Runs, 1)
	port := cfg.Port
	if m.Port != 0 {
		port = m.Port
	}
	base := Measure{File: filepath.Base(path), Size: st.Size(), Runs: runs, TLS: m.Config.TLS, MTU: m.Config.MTU,
		Real: m.Source != "", Codec: codec, Packets: m.Totals.Packets}
	tlsAnalyze, tlsTshark, err := tlsArgs(plain, m, port)
	if err != nil {
		return nil, err
	}
	analyzeArgs := append(slices.Clone(cfg.AnalyzeArgs), tlsAnalyze...)
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer devNull.Close()

	loopCheck := func(stdout []byte) error {
		var res struct{ Packets int64 }
		if err := json.Unmarshal(stdout, &res); err != nil {
			return fmt.Errorf("read loop output %q: %w", stdout, err)
		}
		if res.Packets != m.Totals.Packets {
			return fmt.Errorf("%s: read loop saw %d packets, the manifest says %d", path, res.Packets, m.Totals.Packets)
		}
		return nil
	}
	analyzeCheck := func(stdout []byte) error {
		if err := CheckFindings(stdout, m); err != nil {
			return fmt.Errorf("%s: analyze differs from the manifest: %w", path, err)
		}
		return nil
	}
	analyze := append([]string{"analyze", "--quiet", "--format", "json", "--port", fmt.Sprint(port)}, analyzeArgs...)
	var tools []*tool
	switch codec {
	case "":
		tools = []*tool{
			{name: ToolReadLoop, bin: cfg.ReadLoop, args: []string{path}, check: loopCheck},
			{name: ToolReadLoopZeroCopy, bin: cfg.ReadLoop, args: []string{"-zerocopy", path}, check: loopCheck},
		}
		if cfg.OneWorker {
			one := &tool{name: ToolAnalyzeOne, bin: cfg.Kdupcap, args: append(slices.Clone(analyze), "--workers", "1", path), check: analyzeCheck}
			tools = append(tools, one)
			if base.Real {
				tools = append(tools, &tool{name: ToolAnalyzeOnePair, bin: one.bin, args: one.args, check: analyzeCheck, pair: true})
			}
		}
	case "zst", "gz":
		name, bin := ToolZstd, cfg.Zstd
		if codec == "gz" {
			name, bin = ToolGzip, cfg.Gzip
		}
		if bin == "" {
			return nil, fmt.Errorf("%s: no %s to compare with", path, strings.Fields(name)[0])
		}
		tools = []*tool{{name: name, bin: bin, args: []string{"-dc", path}, devNull: true}}
	}
	tools = append(tools, &tool{name: ToolAnalyze, bin: cfg.Kdupcap, args: append(slices.Clone(analyze), path), check: analyzeCheck})

	// One untimed run of the first tool brings the file into the page
	// cache, so that every timed run reads it from memory. Nothing large
	// is kept: a child's peak RSS (ru_maxrss) counts this process's at the
	// time it started (fork and exec share the parent's memory first).
	if _, _, err := runTo(tools[0].bin, tools[0].args, true, devNull); err != nil {
		return nil, err
	}
	// The tools run in rounds, each round one run of every tool, so that a
	// slow moment of a shared machine slows all of them alike rather than
	// the one that happened to run then.
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.name
	}
	logf("%s: %s, %d rounds", base.File, strings.Join(names, ", "), runs)
	for range runs {
		for _, t := range tools {
			var dn *os.File
			if t.devNull {
				dn = devNull
			}
			var r run
			var err error
			if t.pair {
				r, err = runPair(t.bin, t.args, t.check)
			} else {
				r, _, err = runTo(t.bin, t.args, true, dn)
				if err == nil && t.check != nil {
					err = t.check(r.stdout)
				}
			}
			if err != nil {
				return nil, err
			}
			t.runs = append(t.runs, r)
		}
	}
	var out []Measure
	for _, t := range tools {
		ms := base
		ms.Tool = t.name
		ms.Wall, ms.CPU, ms.PeakRSS = summarize(t.runs)
		if t.pair {
			ms.Size, ms.Packets = 2*ms.Size, 2*ms.Packets
		}
		if t.name == ToolAnalyze || t.name == ToolAnalyzeOne || t.pair {
			if cfg.MaxRSS > 0 && ms.PeakRSS > cfg.MaxRSS {
				return nil, fmt.Errorf("%s: %s peak RSS %s over the %s limit", path, t.name, humanBytes(ms.PeakRSS), humanBytes(cfg.MaxRSS))
			}
			ms.Note = fmt.Sprintf("%d findings = manifest", len(m.Resends))
			if m.Config.TLS {
				ms.Note += ", decrypted"
			}
			if len(analyzeArgs) > 0 {
				shown := slices.Clone(analyzeArgs)
				for i := range shown {
					if i > 0 && shown[i-1] == "--tls-keylog" {
						shown[i] = filepath.Base(shown[i])
					}
				}
				ms.Note += fmt.Sprintf(" (%s)", strings.Join(shown, " "))
			}
		}
		out = append(out, ms)
	}

	if cfg.Tshark == "" || codec != "" {
		return out, nil
	}
	ts := base
	ts.Tool, ts.Runs = ToolTshark, 1
	if cfg.TsharkMaxBytes > 0 && st.Size() > cfg.TsharkMaxBytes {
		logf("%s: tshark skipped (file over %d bytes)", base.File, cfg.TsharkMaxBytes)
		return out, nil
	}
	logf("%s: tshark x1", base.File)
	decodeAs := []string{"-d", fmt.Sprintf("tcp.port==%d,kafka", port)}
	if m.Config.TLS {
		decodeAs = tlsTshark
	}
	r, n, err := runProcess(cfg.Tshark, append(append([]string{"-r", path}, decodeAs...),
		"-Y", "kafka.request_key==0", "-T", "fields", "-e", "kafka.correlation_id"), false)
	if err != nil {
		return nil, err
	}
	ts.Wall, ts.CPU, ts.PeakRSS = r.wall, r.cpu, r.maxRSS
	// tshark 4.0 does not list Produce v9 and later; say how many it saw.
	ts.Note = fmt.Sprintf("listed %d of %d produce requests", n, m.Totals.ProduceRequests)
	return append(out, ts), nil
}

// runPair runs name with args twice at once, checks both outputs, and
// measures them together: the wall time until both end, the CPU time of
// both, the larger peak RSS.
func runPair(name string, args []string, check func([]byte) error) (run, error) {
	var rs [2]run
	var errs [2]error
	start := time.Now()
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() { rs[i], _, errs[i] = runProcess(name, args, true) })
	}
	wg.Wait()
	wall := time.Since(start)
	for i, r := range rs {
		if err := errs[i]; err != nil {
			return run{}, err
		}
		if check != nil {
			if err := check(r.stdout); err != nil {
				return run{}, err
			}
		}
	}
	return run{wall: wall, cpu: rs[0].cpu + rs[1].cpu, maxRSS: max(rs[0].maxRSS, rs[1].maxRSS)}, nil
}

// tlsArgs are the flags that decrypt the TLS capture at path (none for a
// plaintext one): for analyze, --tls-keylog with the key log beside it
// (gencap.KeyLogPath), none when the file carries its keys (a pcapng with
// Config.Secrets); for tshark, the TLS port's Kafka and the key log.
func tlsArgs(path string, m *gencap.Manifest, port uint16) (analyze, tshark []string, err error) {
	if !m.Config.TLS {
		return nil, nil, nil
	}
	tshark = []string{"-d", fmt.Sprintf("tcp.port==%d,tls", port), "-d", fmt.Sprintf("tls.port==%d,kafka", port)}
	if m.Config.Secrets {
		return nil, tshark, nil
	}
	keys := gencap.KeyLogPath(path)
	if _, err := os.Stat(keys); err != nil {
		return nil, nil, fmt.Errorf("key log of TLS capture %s: %w", path, err)
	}
	return []string{"--tls-keylog", keys}, append(tshark, "-o", "tls.keylog_file:"+keys), nil
}

// summarize returns the median wall time with the CPU time of that run, and
// the largest peak RSS of runs.
func summarize(rs []run) (wall, cpu time.Duration, rss int64) {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b run) int { return cmp.Compare(a.wall, b.wall) })
	for _, r := range rs {
		rss = max(rss, r.maxRSS)
	}
	mid := sorted[len(sorted)/2]
	return mid.wall, mid.cpu, rss
}

// jsonFinding is what CheckFindings reads of a finding line of
// `kdupcap analyze --format json`.
type jsonFinding struct {
	Type            string  `json:"type"`
	Client          string  `json:"client"`
	Broker          string  `json:"broker"`
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	Verdict         string  `json:"verdict"`
	AppendedOffsets []int64 `json:"appended_offsets"`
	Attempts        []struct {
		CorrelationID int32 `json:"correlation_id"`
	} `json:"attempts"`
}

// CheckFindings compares the findings in out, analyze's JSON Lines, with
// the manifest's resends: the same set, each with the same client, broker,
// topic-partition, attempts (by correlation ID, in order), verdict and
// appended offsets.
func CheckFindings(out []byte, m *gencap.Manifest) error {
	var found []gencap.Found
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var f jsonFinding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("analyze output line %q: %w", firstLines(sc.Bytes(), 1), err)
		}
		if f.Type != "duplicate" { // producers, the summary
			continue
		}
		ids := make([]int32, len(f.Attempts))
		for i, a := range f.Attempts {
			ids[i] = a.CorrelationID
		}
		found = append(found, gencap.Found{Client: f.Client, Broker: f.Broker, Topic: f.Topic, Partition: f.Partition,
			CorrelationIDs: ids, Verdict: f.Verdict, AppendedOffsets: f.AppendedOffsets})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return m.Check(found)
}

// WriteTable prints ms as one aligned table, then per file the ratios
// analyze/read loop and analyze/tshark (of MB/s; the same file, so of
// packets/s too).
func WriteTable(w io.Writer, ms []Measure) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "file\tsize\ttool\truns\twall\tMB/s\tpackets/s\tpeak RSS\tCPU\tMB/CPU-s\t\tnote\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.3fs\t%.0f\t%.0f\t%s\t%.3fs\t%.0f\t\t%s\t\n", m.File, humanBytes(m.Size), m.Tool, m.Runs,
			m.Wall.Seconds(), m.MBps(), m.PacketsPerSec(), humanBytes(m.PeakRSS), m.CPU.Seconds(), m.CPUMBps(), m.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range Ratios(ms) {
		if _, err := fmt.Fprintln(w, r); err != nil {
			return err
		}
	}
	return nil
}

// Ratios returns one line per file: analyze as a share of the read loops'
// throughput, as a multiple of analyze --workers 1's and of tshark's, when
// they ran; by wall time and by CPU time. On a capture of real clients
// (Measure.Real) the line ends with the targets (Targets), each
// met or not. A compressed capture's line is analyze as a share of its
// decompressor alone, against CompressedTarget. Then one line per TLS file
// with a plaintext file of the same MTU among ms: decrypted analyze as a
// share of plaintext analyze (the target is TLSTarget).
func Ratios(ms []Measure) []string {
	var files []string
	by := map[string]map[string]Measure{}
	for _, m := range ms {
		if by[m.File] == nil {
			by[m.File] = map[string]Measure{}
			files = append(files, m.File)
		}
		by[m.File][m.Tool] = m
	}
	var out []string
	for _, f := range files {
		t := by[f]
		an, ok := t[ToolAnalyze]
		if !ok {
			continue
		}
		var parts, targets []string
		// ratio adds analyze's throughput against name's, when name ran,
		// by wall and by CPU time as show writes them, and whether it
		// meets target (0: none).
		ratio := func(name string, show func(r float64) string, target float64) {
			o, ok := t[name]
			if !ok {
				return
			}
			r := an.MBps() / o.MBps()
			parts = append(parts, fmt.Sprintf("analyze/%s = %s (CPU time: %s)", name, show(r), show(an.CPUMBps()/o.CPUMBps())))
			if target > 0 {
				targets = append(targets, verdict("analyze/"+name, r, target))
			}
		}
		tg := Targets{}
		if an.Real {
			tg = TargetsFor(an.MTU)
		}
		ratio(ToolReadLoop, percent, tg.ReadLoop)
		ratio(ToolReadLoopZeroCopy, percent, tg.ZeroCopy)
		ratio(ToolAnalyzeOne, times(2), tg.OneWorker)
		if pair, ok := t[ToolAnalyzeOnePair]; ok {
			if one, ok := t[ToolAnalyzeOne]; ok {
				parts = append(parts, fmt.Sprintf("two one-worker runs at once / one = %s (CPU time: %s)",
					times(2)(pair.MBps()/one.MBps()), times(2)(pair.CPUMBps()/one.CPUMBps())))
			}
		}
		ratio(ToolZstd, percent, CompressedTarget)
		ratio(ToolGzip, percent, CompressedTarget)
		ratio(ToolTshark, times(1), 0)
		line := f + ": " + strings.Join(parts, ", ")
		if len(targets) > 0 {
			line += "; targets: " + strings.Join(targets, ", ")
		}
		out = append(out, line)
	}
	for _, f := range files {
		an, ok := by[f][ToolAnalyze]
		if !ok || !an.TLS {
			continue
		}
		for _, g := range files {
			pl, ok := by[g][ToolAnalyze]
			if !ok || pl.TLS || pl.MTU != an.MTU || pl.Codec != "" || pl.Real {
				continue
			}
			share, cpuShare := an.MBps()/pl.MBps(), an.CPUMBps()/pl.CPUMBps()
			verdict := "target met"
			if share < TLSTarget {
				verdict = "BELOW TARGET"
			}
			out = append(out, fmt.Sprintf("%s: decrypted analyze / plaintext analyze (%s) = %.0f%% (CPU time: %.0f%%), target >= %.0f%%: %s",
				f, g, 100*share, 100*cpuShare, 100*TLSTarget, verdict))
			break
		}
	}
	return out
}

// percent writes ratio r as a share: 0.5 is "50%".
func percent(r float64) string { return fmt.Sprintf("%.0f%%", 100*r) }

// times writes a ratio as a multiple with the given decimals: times(2)(1.5)
// is "1.50x".
func times(decimals int) func(r float64) string {
	return func(r float64) string { return fmt.Sprintf("%.*fx", decimals, r) }
}

// verdict says whether ratio r of what meets target.
func verdict(what string, r, target float64) string {
	v := "met"
	if r < target {
		v = "BELOW"
	}
	return fmt.Sprintf("%s >= %.2fx %s", what, target, v)
}

// Targets are issue 17's, as ratios of analyze's throughput (0: none):
// to the read loop, to the zero-copy read loop, and to analyze --workers 1.
type Targets struct{ ReadLoop, ZeroCopy, OneWorker float64 }

// TargetsFor returns the targets on a capture of real clients of the given
// MTU: on loopback (65535) at least the read loop and 0.3x the zero-copy
// one, on its 1500-MTU re-cut 0.8x the read loop and 1.6x one worker (the
// second core used); never slower than one worker.
func TargetsFor(mtu int) Targets {
	if mtu == 1500 {
		return Targets{ReadLoop: 0.8, OneWorker: 1.6}
	}
	return Targets{ReadLoop: 1.0, ZeroCopy: 0.3, OneWorker: 1.0}
}

// CompressedTarget is the share of its decompressor's throughput alone
// (zstd -dc, gzip -dc to /dev/null) analyze of a compressed capture should
// reach.
const CompressedTarget = 0.8

// TLSTarget is the share of plaintext analyze throughput decrypted analyze
// should reach (issue 12).
const TLSTarget = 0.5

// humanBytes writes n in MiB, or GiB from 1 GiB on.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
