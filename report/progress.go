package report

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/kdupcap/kdupcap/detect"
)

// Progress draws analyze's progress bar on a terminal while the capture
// files are read: bytes read of their total size (compressed bytes for a
// compressed file), MB/s, the time left at that rate, and the findings
// decided so far with the re-sends seen (a finding is decided once its
// batch's window has passed, so most come at the end of a short capture).
// A nil *Progress draws nothing; all its methods may be called on nil.
type Progress struct {
	bar      *progressbar.ProgressBar
	stats    func() detect.Stats
	interval time.Duration
	last     time.Time
	desc     string
}

// NewProgress returns a bar writing to w, redrawn at most once per
// interval. total is the bytes to read, -1 if unknown; stats gives the
// findings so far (called from the goroutine that calls Update).
func NewProgress(w io.Writer, total int64, interval time.Duration, stats func() detect.Stats) *Progress {
	return &Progress{
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
		interval: interval,
	}
}

// Update moves the bar to read bytes of the files (compressed bytes for a
// compressed file), redrawing it at most once per interval; capture is the
// bytes of capture they held (decompressed), shown when it is more than
// read, so that a file expanding far beyond its size still shows progress.
func (p *Progress) Update(read, capture int64) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < p.interval {
		return
	}
	p.last = now
	s := p.stats()
	desc := fmt.Sprintf("%d findings, %d re-sends", s.Findings, s.Resends)
	if capture > read {
		desc += fmt.Sprintf(", %.1f MB of capture decompressed", float64(capture)/1e6)
	}
	if desc != p.desc {
		p.desc = desc
		p.bar.Describe(desc)
	}
	p.bar.Set64(read)
}

// Finish clears the bar, leaving the terminal line empty for what follows.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.bar.Exit()
	p.bar.Clear()
}
