package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/html"
)

// Bounds of live's /report.
const (
	// reportWait bounds how long a request for the page waits for the run
	// (which answers at every turn of its read loop, every few hundred ms
	// at least) and for the page to be drawn.
	reportWait = 10 * time.Second
	// reportReuse: a page drawn less than this ago is served again, so
	// that requests, however many, take at most one page a second from
	// the run.
	reportReuse = time.Second
)

// liveReport serves /report, the HTML page of a live run so far. The run
// (a pipeline.Live) is not safe for concurrent use: the handler never
// touches it nor the Store, and asks the run's goroutine instead, which
// answers in liveRun.tick (answer): there the Store's findings, the
// producer profiles, the timeline and the summary are handed to a fresh
// html.Writer, all of them copies, and the handler's goroutine draws the
// page from that Writer (its Summary), the costly part, so that the run
// stops reading for the copies only.
type liveReport struct {
	store    *html.Store
	requests chan pageRequest // to the run's goroutine
	ended    chan struct{}    // closed once the run stopped reading
	endOnce  sync.Once
	wait     time.Duration
	reuse    time.Duration

	// draw holds the one request drawing a page; page and at, the last
	// page drawn and when, are read and written by its holder only.
	draw chan struct{}
	page []byte
	at   time.Time
}

// pageRequest asks the run's goroutine for a page written to buf.
type pageRequest struct {
	buf   *bytes.Buffer
	reply chan preparedPage // buffered: the run never waits on it
}

// preparedPage is a Writer handed everything of the page but the summary,
// and the summary that writes it.
type preparedPage struct {
	w   *html.Writer
	sum report.Summary
	err error
}

func newLiveReport(st *html.Store) *liveReport {
	return &liveReport{store: st, requests: make(chan pageRequest), ended: make(chan struct{}),
		wait: reportWait, reuse: reportReuse, draw: make(chan struct{}, 1)}
}

// end says the run stopped reading: requests are answered 503 from now
// on. A second call does nothing.
func (lr *liveReport) end() { lr.endOnce.Do(func() { close(lr.ended) }) }

// answer gives each request waiting a Writer from prepare, on the run's
// goroutine; it does not wait for one.
func (lr *liveReport) answer(prepare func(w io.Writer) (*html.Writer, report.Summary, error)) {
	for {
		select {
		case req := <-lr.requests:
			w, sum, err := prepare(req.buf)
			req.reply <- preparedPage{w: w, sum: sum, err: err}
		default:
			return
		}
	}
}

// reportPage hands a Writer of a page to w the findings of the Store, the
// producer profiles and timeline of the run so far, and returns it with
// the run's summary so far; on the run's goroutine (every value handed
// over is a copy: the Writer can draw the page on another).
func (r *liveRun) reportPage(w io.Writer) (*html.Writer, report.Summary, error) {
	hw, err := r.report.store.Page(w)
	if err != nil {
		return nil, report.Summary{}, err
	}
	if err := writeProducers(hw, r.run.Producers(), r.run.Timeline); err != nil {
		return nil, report.Summary{}, err
	}
	return hw, r.run.Summary(), nil
}

var (
	errReportEnded = errors.New("the live run has ended")
	errReportLate  = errors.New("the live run did not answer in time")
)

// ServeHTTP answers GET /report with the page, text/html; 503 once the
// run has ended or when it did not answer within reportWait.
func (lr *liveReport) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "kdupcap: /report answers GET", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), lr.wait)
	defer cancel()
	page, err := lr.get(ctx)
	switch {
	case errors.Is(err, errReportEnded) || errors.Is(err, errReportLate):
		http.Error(w, "kdupcap: "+err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil:
		http.Error(w, "kdupcap: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(page)))
	h.Set("Cache-Control", "no-store")
	w.Write(page) // a client gone away is not the run's error
}

// get returns the last page if drawn less than reuse ago, else asks the
// run for a new one and draws it, one request at a time.
func (lr *liveReport) get(ctx context.Context) ([]byte, error) {
	select {
	case lr.draw <- struct{}{}:
	case <-ctx.Done():
		return nil, errReportLate
	}
	defer func() { <-lr.draw }()
	if lr.page != nil && time.Since(lr.at) < lr.reuse {
		return lr.page, nil
	}
	select {
	case <-lr.ended:
		return nil, errReportEnded
	default:
	}
	req := pageRequest{buf: new(bytes.Buffer), reply: make(chan preparedPage, 1)}
	select {
	case lr.requests <- req:
	case <-lr.ended:
		return nil, errReportEnded
	case <-ctx.Done():
		return nil, errReportLate
	}
	var p preparedPage
	select {
	case p = <-req.reply:
	case <-ctx.Done():
		return nil, errReportLate
	}
	if p.err == nil {
		p.err = p.w.Summary(p.sum)
	}
	if p.err != nil {
		return nil, fmt.Errorf("drawing the report: %w", p.err)
	}
	lr.page, lr.at = req.buf.Bytes(), time.Now()
	return lr.page, nil
}
