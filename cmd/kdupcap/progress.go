package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/kdupcap/kdupcap/detect"
)

// progressInterval is how often the bar is redrawn at most.
const progressInterval = 100 * time.Millisecond

// progress draws analyze's progress bar on stderr while the capture files
// are read: bytes read of their total size (compressed bytes for a
// compressed file), MB/s, the time left at that rate, and the findings
// decided so far with the re-sends seen (a finding is decided once its
// batch's window has passed, so most come at the end of a short capture).
// A nil *progress draws nothing; all its methods may be called on nil.
type progress struct {
	bar      *progressbar.ProgressBar
	stats    func() detect.Stats
	interval time.Duration
	last     time.Time
	desc     string
}

// progressOn reports whether analyze draws a progress bar: only on a
// terminal (isTerminal of stderr) and when --quiet was not given.
func progressOn(terminal, quiet bool) bool {
	return terminal && !quiet
}

// inputSize is the total size of the files, or -1 when one is standard
// input or cannot be stat'ed (the bar then shows bytes and rate only).
func inputSize(files []string) int64 {
	var total int64
	for _, f := range files {
		if f == "-" {
			return -1
		}
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			return -1
		}
		total += st.Size()
	}
	return total
}

// newProgress returns a bar writing to w, or nil when !on. total is the
// bytes to read, -1 if unknown; stats gives the findings so far.
func newProgress(w io.Writer, on bool, total int64, stats func() detect.Stats) *progress {
	if !on {
		return nil
	}
	return &progress{
		bar: progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("reading"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(25),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSpinnerType(14),
			// The bar is redrawn only when update says so: no goroutine
			// of the library's own writes to w.
			progressbar.OptionSetSpinnerChangeInterval(0),
		),
		stats:    stats,
		interval: progressInterval,
	}
}

// update moves the bar to read bytes, redrawing it at most once per
// interval.
func (p *progress) update(read int64) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < p.interval {
		return
	}
	p.last = now
	s := p.stats()
	if desc := fmt.Sprintf("%d findings, %d re-sends", s.Findings, s.Resends); desc != p.desc {
		p.desc = desc
		p.bar.Describe(desc)
	}
	p.bar.Set64(read)
}

// finish clears the bar, leaving the terminal line empty for what follows.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.bar.Exit()
	p.bar.Clear()
}
