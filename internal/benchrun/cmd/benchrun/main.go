// Command benchrun runs the read loops, `kdupcap analyze` (with one worker
// and at its default) and tshark on captures with a manifest (generated, or
// of real clients), and a compressed capture's decompressor beside its
// analyze, checks analyze against each capture's manifest, and prints one
// table (see package benchrun).
//
//	benchrun -kdupcap ./kdupcap -readloop bin/readloop [-tshark /usr/bin/tshark] FILE... [FILE.zst FILE.gz]
//
// After the table it prints a line on the machine: how long a cache line
// takes from one CPU to another and back (benchrun.CoreRoundTrip), what a
// split of the work between two CPUs pays and two processes do not.
//
// It exits 1 when a run fails or analyze's findings differ from a manifest.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/internal/benchrun"
)

// coreRounds and coreTries size the measure of benchrun.CoreRoundTrip:
// about half a second on a VM whose CPUs lie far apart.
const (
	coreRounds = 200000
	coreTries  = 5
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg benchrun.Config
	fs.StringVar(&cfg.Kdupcap, "kdupcap", "./kdupcap", "kdupcap binary")
	fs.StringVar(&cfg.ReadLoop, "readloop", "bin/readloop", "readloop binary (internal/benchrun/cmd/readloop)")
	tshark := fs.String("tshark", "auto", "tshark binary; auto: tshark from PATH if any; empty: skip tshark")
	port := fs.Uint("port", 9092, "broker port of the captures")
	fs.IntVar(&cfg.Runs, "runs", 3, "runs of the read loop and of analyze per file; the median wall time counts")
	fs.Int64Var(&cfg.TsharkMaxBytes, "tshark-max-bytes", 0, "skip tshark on files larger than this (0: no limit)")
	analyzeArgs := fs.String("analyze-args", "", "more analyze flags, space-separated (such as \"--window 1m\")")
	maxRSS := fs.Int64("max-rss-mib", 256, "fail when analyze's peak RSS exceeds this many MiB (0: no limit)")
	fs.BoolVar(&cfg.OneWorker, "one-worker", true, "run analyze --workers 1 too, beside the default")
	zstd := fs.String("zstd", "auto", "zstd binary a .zst capture's analyze is compared with; auto: from PATH")
	gzip := fs.String("gzip", "auto", "gzip binary a .gz capture's analyze is compared with; auto: from PATH")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 || *port == 0 || *port > 65535 {
		fmt.Fprintln(stderr, "usage: benchrun [flags] FILE...")
		return 2
	}
	cfg.Port = uint16(*port)
	cfg.MaxRSS = *maxRSS << 20
	cfg.AnalyzeArgs = strings.Fields(*analyzeArgs)
	cfg.Tshark = *tshark
	if cfg.Tshark == "auto" {
		cfg.Tshark, _ = exec.LookPath("tshark") // none: skipped
	}
	cfg.Zstd, cfg.Gzip = *zstd, *gzip
	if cfg.Zstd == "auto" {
		cfg.Zstd, _ = exec.LookPath("zstd")
	}
	if cfg.Gzip == "auto" {
		cfg.Gzip, _ = exec.LookPath("gzip")
	}
	cfg.Log = stderr
	// Before the runs, on the machine as it is: what a split of the work
	// between two CPUs pays for each cache line of bytes it hands on.
	trip, tripOK := benchrun.CoreRoundTrip(coreRounds, coreTries, 10*time.Second)
	var all []benchrun.Measure
	failed := false
	for _, f := range fs.Args() {
		ms, err := benchrun.File(cfg, f)
		if err != nil {
			fmt.Fprintf(stderr, "benchrun: %v\n", err)
			failed = true
			continue
		}
		all = append(all, ms...)
	}
	if err := benchrun.WriteTable(stdout, all); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	if tripOK {
		fmt.Fprintf(stdout, "machine: %d CPUs; a cache line's round trip between two of them: %d ns (median of %d runs of %d)\n",
			runtime.NumCPU(), trip.Nanoseconds(), coreTries, coreRounds)
	} else {
		fmt.Fprintf(stdout, "machine: %d CPUs; a cache line's round trip between two of them: not measured\n", runtime.NumCPU())
	}
	if failed {
		return 1
	}
	return 0
}
