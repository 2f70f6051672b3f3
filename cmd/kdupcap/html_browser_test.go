package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/kdupcap/kdupcap/internal/gencap"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestHTMLChromium opens the --html page of each testdata capture in one
// headless Chromium (driven with chromedp, a tab per page): the page
// loads with no console message, exception or browser log error and
// requests nothing but its own file; the numbers it shows (findings per
// verdict, records held twice, each finding's attempts and marks) are
// those of the JSON output of the same run; a link to the last finding
// (#fN) opens it; a real mouse click on a timeline mark opens, highlights
// and scrolls to that mark's finding; a screenshot at 1280x800, written
// under the test's output (go test -artifacts), is not blank; at a
// phone's width and printed, the layout holds (layoutChecks). The
// subtest gencap-100k is the report of a generated capture of 100000
// findings and more (largeReport).
func TestHTMLChromium(t *testing.T) {
	b := newBrowser(t)
	out := t.ArtifactDir()
	t.Run("gencap-100k", func(t *testing.T) {
		t.Parallel()
		largeReport(t, b)
	})
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			capturePage(t, b, file, out)
		})
	}
}

// capturePage checks the page of one testdata capture in b (see
// TestHTMLChromium), its screenshot written to dir.
func capturePage(t *testing.T, b *browser, file, dir string) {
	page := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"analyze", "--format", "json", "--records", "5", "--html", page, file}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := readJSON(t, stdout.Bytes())
	last := len(want.attempts) // the last finding: harmless ones are folded
	fragment := ""
	if last > 0 {
		fragment = "#f" + strconv.Itoa(last)
	}
	tb, loaded := b.open(t, page, fragment, 20*time.Second)
	t.Logf("loaded in %v", loaded.Round(time.Millisecond))

	got := readDOM(t, tb)
	for k, v := range want.numbers {
		if got.numbers[k] != v {
			t.Errorf("%s: page %q, JSON %q", k, got.numbers[k], v)
		}
	}
	if len(got.findings) != len(want.attempts) {
		t.Fatalf("%d findings drawn, JSON %d", len(got.findings), len(want.attempts))
	}
	for i, f := range got.findings {
		num := i + 1
		if f.ID != "f"+strconv.Itoa(num) {
			t.Errorf("finding %d drawn as %q", num, f.ID)
		}
		if f.Attempts != want.attempts[i] {
			t.Errorf("finding %d: %d attempts shown, JSON %d", num, f.Attempts, want.attempts[i])
		}
		if f.Rows != want.kept[i] || f.Sends != want.kept[i] {
			t.Errorf("finding %d: %d attempt rows and %d attempts in its lanes, JSON %d attempts kept", num, f.Rows, f.Sends, want.kept[i])
		}
		if got.MarksOut == 0 && f.Marks != max(want.kept[i]-1, 0) {
			t.Errorf("finding %d: %d timeline marks, JSON %d re-sends", num, f.Marks, want.kept[i]-1)
		}
	}
	if got.TableRows != len(want.attempts) {
		t.Errorf("%d rows in the findings table, JSON %d findings", got.TableRows, len(want.attempts))
	}
	if last > 0 {
		if err := shown(tb, fragment[1:]); err != nil {
			t.Errorf("the link %s: %v", fragment, err)
		}
	}

	// The screenshot of the page's top: headline, counts, timeline.
	if _, err := chromedp.Run(tb.ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(dir, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))+".png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if v := pixelVariance(t, shot); v < 100 {
		t.Errorf("screenshot %s is blank: luminance variance %.1f", shot, v)
	}

	if num := clickMark(t, tb); num != "" {
		if err := shown(tb, num); err != nil {
			t.Errorf("a click on the mark of %s: %v", num, err)
		}
	}
	layoutChecks(t, tb)
	tb.check(t)
}

// browser is one headless Chromium shared by a test's subtests, each page
// in a tab of its own.
type browser struct{ ctx context.Context }

// tab is one page open in the browser and what it reported: its requests,
// and any console message, exception or browser log entry of level
// warning or error.
type tab struct {
	ctx      context.Context
	self     string // the page's file:// URL, the one request it may make
	mu       sync.Mutex
	requests []string
	problems []string
}

// newBrowser starts Chromium (testenv.Tool: skipped locally when it is
// missing, failing under CI) with a 1280x800 window and no network: every
// host lookup is refused and the background services are off, so that a
// page that tried to fetch something would fail to, and its Network
// events would say so. The browser ends with t.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	chromium := testenv.Tool(t, "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // CI runs the tests as root, where Chromium refuses its sandbox
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return &browser{ctx: ctx}
}

// open loads file (with fragment: "" or "#f12") in a new 1280x800 tab of
// b and waits, within limit, for the page's script to run to its end
// (data-ready on <html>); it returns the tab and the time that took. The
// tab ends with t.
func (b *browser) open(t *testing.T, file, fragment string, limit time.Duration) (*tab, time.Duration) {
	t.Helper()
	tb := &tab{self: (&url.URL{Scheme: "file", Path: file}).String()}
	var cancel context.CancelFunc
	tb.ctx, cancel = chromedp.NewContext(b.ctx, chromedp.WithListener(tb.listen))
	t.Cleanup(cancel)
	if err := chromedp.Do(tb.ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	ctx, done := context.WithTimeout(tb.ctx, limit)
	defer done()
	start := time.Now()
	err := chromedp.Do(ctx, chromedp.Navigate(tb.self+fragment))
	for err == nil {
		var ready bool
		if ready, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.dataset.ready === "1"`)); ready {
			break
		}
		if err == nil && tb.failed() { // an exception: the script will not get to its end
			err = errors.New("the page's script stopped")
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if err != nil {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		t.Fatalf("loading %s within %v: %v; the page reported: %q", tb.self+fragment, limit, err, tb.problems)
	}
	return tb, time.Since(start)
}

// failed says whether the page threw an exception.
func (tb *tab) failed() bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return slices.ContainsFunc(tb.problems, func(p string) bool { return strings.HasPrefix(p, "exception") })
}

// check fails t for each console message, exception or log error the tab
// reported, and each request other than the page's file itself. A data:
// URL would pass: its bytes are in the page (an embedded font or image is
// what the report may use), no network is asked for them; Chromium does
// not report them as requests anyway.
func (tb *tab) check(t *testing.T) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, p := range tb.problems {
		t.Errorf("the page reported: %s", p)
	}
	if len(tb.requests) == 0 {
		t.Errorf("no request seen, not even %s: are the Network events on?", tb.self)
	}
	for _, r := range tb.requests {
		if r != tb.self && !strings.HasPrefix(r, "data:") {
			t.Errorf("the page requested %s: it must need nothing but its own file", r)
		}
	}
}

// listen runs in the tab's event loop: it only records.
func (tb *tab) listen(e any) {
	var problem, request string
	switch e := e.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range e.Args {
			if a.Value != nil {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		problem = fmt.Sprintf("console.%s(%s)", e.Type, strings.Join(args, ", "))
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		desc := d.Text
		if d.Exception != nil {
			desc += " " + d.Exception.Description
		}
		problem = fmt.Sprintf("exception at %s:%d:%d: %s", d.URL, d.LineNumber+1, d.ColumnNumber+1, desc)
	case *log.EventEntryAdded:
		if l := e.Entry.Level; l == log.EntryLevelError || l == log.EntryLevelWarning {
			problem = fmt.Sprintf("%s log %s: %s (%s)", e.Entry.Source, l, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		request = e.Request.URL
	}
	if problem == "" && request == "" {
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if problem != "" {
		tb.problems = append(tb.problems, problem)
	}
	if request != "" {
		tb.requests = append(tb.requests, request)
	}
}

// domNumbers is what the page shows, read in the browser.
type domNumbers struct {
	numbers   map[string]string // dd[data-verdict] and dd[id] of the counts: their text
	findings  []domFinding      // details.finding, in order
	TableRows int               // rows of the findings table
	MarksOut  int               // re-sends the timeline does not mark
}

type domFinding struct {
	ID       string `json:"id"`
	Attempts int    `json:"attempts"` // data-attempts
	Rows     int    `json:"rows"`     // rows of its attempts table
	Sends    int    `json:"sends"`    // attempts drawn in its lanes
	Marks    int    `json:"marks"`    // its marks on the timeline
}

const readDOMJS = `(() => {
  const numbers = {};
  document.querySelectorAll("dl.counts dd").forEach((d) => {
    const k = d.dataset.verdict || d.id;
    if (k) { numbers[k] = d.textContent.trim(); }
  });
  const findings = Array.from(document.querySelectorAll("details.finding"), (d) => ({
    id: d.id,
    attempts: Number(d.dataset.attempts),
    rows: d.querySelectorAll("table.attempts tbody tr").length,
    sends: d.querySelectorAll("svg.lanes circle.send").length,
    marks: document.querySelectorAll('#tl .mk[data-f="' + d.id.slice(1) + '"]').length,
  }));
  const out = document.getElementById("marks-out");
  return {
    numbers: numbers,
    findings: findings,
    tableRows: document.querySelectorAll("#ft tbody tr").length,
    marksOut: out ? Number(out.dataset.n) : 0,
  };
})()`

// readDOM reads the numbers the page in tab shows.
func readDOM(t *testing.T, tb *tab) domNumbers {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[struct {
		Numbers   map[string]string `json:"numbers"`
		Findings  []domFinding      `json:"findings"`
		TableRows int               `json:"tableRows"`
		MarksOut  int               `json:"marksOut"`
	}](readDOMJS))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	return domNumbers{numbers: v.Numbers, findings: v.Findings, TableRows: v.TableRows, MarksOut: v.MarksOut}
}

// clickMark clicks, with the mouse, a timeline mark of the page in tab
// that nothing covers (marks of one verdict close in time overlap): one
// of a harmless finding if there is one (folded, so the click must unfold
// it), and returns the finding it marks ("f12"), or "" when the timeline
// has no mark.
func clickMark(t *testing.T, tb *tab) string {
	t.Helper()
	// The harmless findings folded again, as a page opens (the link #fN
	// opened them); the mark to click: scrolled into view, the topmost at
	// its centre, one of a folded finding if there is one.
	pick := `(() => {
  const svg = document.getElementById("tl");
  if (!svg) { return {num: ""}; }
  document.querySelectorAll("details.harmless, details.harmless details.finding").forEach((d) => { d.open = false; });
  svg.scrollIntoView({block: "center"});
  const marks = Array.from(svg.querySelectorAll(".mk"));
  const free = marks.filter((m) => {
    const r = m.getBoundingClientRect();
    return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === m;
  });
  const folded = free.filter((m) => {
    const d = document.getElementById("f" + m.dataset.f);
    return d && !d.open;
  });
  const m = folded[0] || free[free.length - 1];
  if (!m) { return {num: marks.length ? "covered" : ""}; }
  m.setAttribute("data-click", "1");
  return {num: "f" + m.dataset.f, folded: folded.length > 0};
})()`
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[struct {
		Num    string `json:"num"`
		Folded bool   `json:"folded"`
	}](pick))
	num, folded := v.Num, v.Folded
	switch {
	case err != nil:
		t.Fatalf("choosing a mark: %v", err)
	case num == "covered":
		t.Fatal("every timeline mark is covered by another element")
	case num == "":
		return ""
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS(`#tl .mk[data-click="1"]`)))
	if err != nil {
		t.Fatalf("the mark of %s: %v", num, err)
	}
	if err := chromedp.Do(ctx, chromedp.MouseClickNode(nodes[0])); err != nil {
		t.Fatalf("clicking the mark of %s: %v", num, err)
	}
	if sel, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#tl .mk[data-click="1"]').classList.contains("sel")`)); err != nil || !sel {
		t.Errorf("the clicked mark of %s is not selected (%v)", num, err)
	}
	t.Logf("clicked the mark of %s, folded %v", num, folded)
	return num
}

// shown waits (a few seconds at most: scrolling may be smooth) until
// finding id ("f12") is open, highlighted, the only one highlighted, and
// in the viewport.
func shown(tb *tab, id string) error {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	js := `(() => {
  const d = document.getElementById(` + strconv.Quote(id) + `);
  if (!d) { return "not on the page"; }
  const outer = d.closest("details.harmless");
  if (outer && !outer.open) { return "its harmless group is folded"; }
  if (!d.open) { return "not open"; }
  if (!d.classList.contains("hl")) { return "not highlighted"; }
  const hl = document.querySelectorAll("details.hl").length;
  if (hl !== 1) { return hl + " findings highlighted"; }
  const r = d.getBoundingClientRect();
  if (r.bottom <= 0 || r.top >= window.innerHeight) { return "not scrolled into view (top " + Math.round(r.top) + " px of " + window.innerHeight + ")"; }
  return "";
})()`
	var last string
	for {
		why, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			if last != "" {
				return fmt.Errorf("%s (%w)", last, err)
			}
			return err
		}
		if why == "" {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// largeReport: the report of a capture of more than 100000 findings stays
// under 5 MB, says what it leaves out (table rows, findings drawn in full,
// timeline marks: the numbers shown and left out add up to the findings
// and re-sends of the capture) and loads in the browser within 20 s (a
// bound; the test logs the time taken), its counts those of the
// generator's manifest.
//
// The capture is the cheapest that gencap makes of that many findings:
// every producer acks=all (Config.AcksAll), batches of one record of 100
// bytes, every batch resent (ResendEvery 1), so that nearly every
// exchange is a resend (some 1.3 KB and 10 packets each, 128 MiB in all).
// It streams through a pipe into analyze's standard input (never on
// disk), generator and analysis on the two cores at once, and analyze
// writes only the page (--format html, the page --html writes).
func largeReport(t *testing.T, b *browser) {
	const findings = 100000
	cfg := gencap.Config{TargetBytes: 128 << 20, Seed: 1, ResendEvery: 1, RetransmitEvery: -1,
		AcksAll: true, MaxRecords: 1, MaxValueBytes: 100}
	pr, pw := io.Pipe()
	start := time.Now()
	type generated struct {
		m    *gencap.Manifest
		took time.Duration
		err  error
	}
	gen := make(chan generated, 1)
	go func() {
		m, err := gencap.Generate(pw, cfg)
		pw.CloseWithError(err)
		gen <- generated{m, time.Since(start), err}
	}()
	var page, stderr bytes.Buffer
	code := run([]string{"analyze", "--quiet", "--format", "html", "-"}, pr, &page, &stderr)
	pr.CloseWithError(errors.New("analyze returned")) // a generator still writing stops
	g := <-gen
	took := time.Since(start)
	if code != exitOK {
		t.Fatalf("analyze exit %d: %s (gencap: %v)", code, stderr.String(), g.err)
	}
	if g.err != nil {
		t.Fatalf("gencap: %v", g.err)
	}
	tot := g.m.Totals
	t.Logf("%d findings, %d packets, %d bytes: generator done after %v (held back by analyze, through the pipe), analyze after %v; page %d bytes",
		tot.Resends, tot.Packets, tot.Bytes, g.took.Round(time.Millisecond), took.Round(time.Millisecond), page.Len())
	if tot.Resends < findings {
		t.Fatalf("the capture holds %d resends, want %d or more: raise TargetBytes", tot.Resends, findings)
	}
	if page.Len() >= 5<<20 {
		t.Errorf("page of %d findings: %d bytes, the bound is 5 MiB", tot.Resends, page.Len())
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tb, loaded := b.open(t, file, "", 20*time.Second)
	t.Logf("loaded in the browser in %v", loaded.Round(time.Millisecond))

	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[struct {
		Numbers  map[string]string `json:"numbers"`
		Rows     int               `json:"rows"`
		Full     int               `json:"full"`
		Marks    int               `json:"marks"`
		RowsOut  int               `json:"rowsOut"`
		FullOut  int               `json:"fullOut"`
		MarksOut int               `json:"marksOut"`
	}](`(() => {
  const numbers = {};
  document.querySelectorAll("dl.counts dd").forEach((d) => {
    const k = d.dataset.verdict || d.id;
    if (k) { numbers[k] = d.textContent.trim(); }
  });
  const out = (id) => { const e = document.getElementById(id); return e ? Number(e.dataset.n) : 0; };
  return {
    numbers: numbers,
    rows: document.querySelectorAll("#ft tbody tr").length,
    full: document.querySelectorAll("details.finding").length,
    marks: document.querySelectorAll("#tl .mk").length,
    rowsOut: out("rows-out"), fullOut: out("full-out"), marksOut: out("marks-out"),
  };
})()`))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	if got, want := v.Numbers["n-findings"], strconv.FormatInt(tot.Resends, 10); got != want {
		t.Errorf("findings: page %q, manifest %s", got, want)
	}
	for verdict, n := range tot.Verdicts {
		if got, want := v.Numbers[verdict], strconv.FormatInt(n, 10); got != want {
			t.Errorf("%s: page %q, manifest %s", verdict, got, want)
		}
	}
	for _, c := range []struct {
		what       string
		shown, out int
		want       int64
	}{
		{"findings table rows", v.Rows, v.RowsOut, tot.Resends},
		{"findings drawn in full", v.Full, v.FullOut, tot.Resends},
		{"timeline marks (one per resend: two attempts each)", v.Marks, v.MarksOut, tot.Resends},
	} {
		t.Logf("%s: %d shown, %d left out", c.what, c.shown, c.out)
		if c.out == 0 {
			t.Errorf("%s: the page does not say it left any out", c.what)
		}
		if int64(c.shown+c.out) != c.want {
			t.Errorf("%s: %d shown and %d said left out, want %d in all", c.what, c.shown, c.out, c.want)
		}
	}
	tb.check(t)
}
