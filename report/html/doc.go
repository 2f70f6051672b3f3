// Package html writes the findings of a run as one self-contained HTML
// page, an incident report for people who would rather look than read:
// the table's headline, a timeline of the capture with every re-send
// marked, each finding's attempts on a time axis, each producer's
// settings, diagnosis, latency and re-sends by cause.
//
// # Place in the flow
//
// capture -> decode -> detect -> profile -> report -> report/html. New
// returns a report.Writer (and report.ProducerWriter): cmd/kdupcap hands it
// detect.Finding values, the profile.Producer profiles and the
// report.Summary, as it does the table and JSON writers (`kdupcap analyze
// --html FILE`, `--format html`), and the run's profile.Timeline
// (report.TimelineWriter). It imports detect, profile and report (and
// decode, for the names of a connection's end) only; it must never import
// capture, pipeline, cmd/kdupcap nor gopacket, so it knows findings and
// profiles, never how they were found.
//
// # Design
//
// One file that opens from a disk or a mail attachment with no network
// and no server: every style and script is inline (go:embed of
// assets/page.css and assets/page.js, written into the page), and the
// drawings are SVG drawn here in Go, text escaped by html/template or
// html.EscapeString. No charting library: the drawings are a few lines,
// marks and bars; a library would have to be vendored at a pinned version
// with its licence, weigh more than the page it draws, and bring its own
// updates. The script only changes what is drawn: it zooms and pans the
// timeline by changing the SVG viewBox (marks keep their width with
// vector-effect), opens a finding when its mark is clicked (or, from the
// keyboard, stepped to with n and p on the focused timeline, which +, −,
// ← and → zoom and pan), and sorts and filters the findings table; a link to report.html#f12 opens finding 12
// as a click on its mark does; without it (printing, a viewer with
// scripts off) the page shows the whole timeline and every finding.
// Colours follow prefers-color-scheme; the layout is CSS grid and flex
// with overflow-x on wide tables (1280 px and phone widths); a print
// stylesheet keeps the timeline and hides the controls.
//
// # Timeline
//
// The latency drawn is that of every answered produce request of the
// run, per broker and bucket of capture time: the profile.Timeline the
// profiler keeps of every exchange, handed to Timeline (p50 and p99). A
// writer given none (a caller that only has findings) draws the re-sends
// alone, and the page says so. Each attempt
// after a finding's first is a mark at its send time, in the row and
// colour of the finding's verdict.
//
// # Per producer
//
// Its settings read off the wire, diagnosis and fix, latency per broker
// (p50, p99, maximum bars), a latency histogram per broker (one bar per
// octave, profile.BrokerLatency.Histogram) and its re-sends by cause.
//
// # Bounds and ownership
//
// Finding reads f during the call and keeps copies of what it draws: the
// counts of the headline (report.Headline, bounded as the table's), a
// fixed-size Timeline, at most MaxMarks marks, MaxRows table rows,
// MaxFull findings drawn in full (with at most 20 records each, 64 bytes
// of a key or value), MaxProducers producers; what is past a bound is
// counted and the page says so. The defaults keep a page of thousands of
// findings under 5 MB. The page is written at Summary, in one Write.
//
// # A live run's page
//
// A live run reports a finding as soon as it is decided, and again, with
// the same Finding.ID, when a later attempt revises it; its page (`kdupcap
// live --metrics`, at /report) is asked for at any time. A Store is the
// report.Writer that keeps the latest report of each finding: at most
// DefaultStoreFindings of them, of at most DefaultStoreBytes (an
// estimate), of each only what a page shows and counts (20 records, 64
// bytes of a key or value, no headers; a record-level finding's other
// records by their copies alone); past a bound it forgets the finding
// reported longest ago and counts it (Options.Evicted, which the page
// says). Store.Page hands a fresh Writer the findings kept, in the order
// first reported, each numbered as the run's Nth finding (#fN names the
// same finding on every page of the run); the caller hands it the
// producers and the summary of the run so far.
//
// # Bad input
//
// Names and bytes off the wire are shown through report.Printable and
// escaped; a finding with no attempt draws no lanes.
//
// # Files
//
//   - writer.go: Writer, New, Options; Finding, Timeline and Producers,
//     which keep what the page draws.
//   - page.go: Summary and the page's template.
//   - store.go: Store, the latest report of each finding of a live run,
//     bounded, and its Page.
//   - svg.go: the drawings: a finding's lanes, a producer's latency and
//     histogram per broker, the timeline.
//   - assets.go: the embedded style and script (assets/page.css,
//     assets/page.js).
//   - drawing_test.go: the client's timeout interval (and its false
//     positives), the run's timeline, the histograms.
//   - html_test.go: the page parses, fetches nothing, escapes what it
//     shows, names client.ids and shows null and cut bytes in the table's
//     words, and stays under 5 MB for 5000 and 100000 findings. The tests
//     of the pages of the testdata captures (numbers equal to the JSON
//     output's) are cmd/kdupcap's html_test.go; those in headless
//     Chromium (no console error, no request, a click on a mark opens its
//     finding, a 100k-finding page) its html_browser_test.go.
//   - store_test.go: a revision replaces its finding's report, the bounds
//     evict the finding reported longest ago and the page says so, the
//     page draws each finding once, as the page of the latest reports.
//     The test of live's /report is cmd/kdupcap's livereport_test.go.
package html
