package html

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// page is what the template draws.
type page struct {
	Title       string
	Headline    []string
	Status      []string
	Held        report.HeldCounts
	Verdicts    []verdictCount
	Findings    int
	Files       []string
	Span        string // the capture time the page covers, UTC
	Timeline    timelineDrawing
	TimelineAll bool // of every answered request, not only the findings'
	MarksOut    int
	Rows        []findingRow
	RowsOut     int
	Harmful     []findingFull
	Harmless    []findingFull
	FullOut     int
	Hidden      int
	Evicted     int
	Producers   []producerView
	ProdsOut    int
	Colours     []verdictColour
	Interrupted string
}

type verdictCount struct {
	Verdict string
	Index   int
	Count   int64
}

type verdictColour struct {
	Index   int
	Verdict string
}

// Summary writes the page: the headline and counts of s, the timeline,
// the findings and producers kept. It is called once, last.
func (w *Writer) Summary(s report.Summary) error {
	if w.done {
		return fmt.Errorf("report/html: Summary called twice")
	}
	w.done = true
	p := page{Title: w.opts.Title, Held: w.head.Held(), Findings: w.seen, Files: s.Files,
		MarksOut: w.marksOut, Rows: w.rows, RowsOut: w.rowsOut, FullOut: w.fullOut, Hidden: w.hidden, Evicted: w.opts.Evicted,
		Producers: w.producers, ProdsOut: w.producersOut, Interrupted: s.Interrupted}
	for _, l := range strings.Split(strings.TrimRight(w.head.Text(&s), "\n"), "\n") {
		if l != "" {
			p.Headline = append(p.Headline, l)
		}
	}
	if st, ok := s.NothingToJudge(); ok {
		p.Status = append(p.Status, "Nothing to judge: "+st.Text)
	}
	p.Status = append(p.Status, s.Errors...)
	for i, v := range detect.Verdicts() {
		p.Verdicts = append(p.Verdicts, verdictCount{Verdict: string(v), Index: i, Count: s.ByVerdict[string(v)]})
		p.Colours = append(p.Colours, verdictColour{Index: i, Verdict: string(v)})
	}
	for _, f := range w.full {
		if f.Harmful {
			p.Harmful = append(p.Harmful, f)
		} else {
			p.Harmless = append(p.Harmless, f)
		}
	}
	tl := w.tl
	if tl == nil { // no latency handed: the marks alone
		tl = profile.NewTimeline(2)
	}
	p.Timeline = drawTimeline(tl, w.marks, w.first, w.last)
	if !w.first.IsZero() {
		p.Span = "capture time " + timeText(w.first) + " to " + timeText(w.last) + " UTC"
	}
	p.TimelineAll = w.tl != nil
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, &p); err != nil {
		return fmt.Errorf("report/html: drawing the page: %w", err)
	}
	if _, err := w.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("report/html: writing the page: %w", err)
	}
	return nil
}

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

var pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="kdupcap">
<title>{{.Title}}</title>
<style>` + pageCSS + `</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
{{if .Files}}<p class="files">{{range $i, $f := .Files}}{{if $i}}, {{end}}{{$f}}{{end}}</p>{{end}}
{{if .Span}}<p class="files" id="span">{{.Span}}</p>{{end}}
</header>
<main>
<section id="headline" aria-label="headline">
{{if .Headline}}<pre class="head">{{range .Headline}}{{.}}
{{end}}</pre>{{else}}<p>No batch was sent more than once.</p>{{end}}
{{range .Status}}<p class="status">{{.}}</p>{{end}}
{{if .Interrupted}}<p class="status">Interrupted by {{.Interrupted}}: these are the findings of what was read.</p>{{end}}
{{if .Evicted}}<p class="status" id="evicted">{{.Evicted}} findings reported earlier in the run are not on this page (it keeps the {{.Findings}} reported last): the counts per verdict take every finding of the run, the headline, the records held twice, the table and the timeline's marks those {{.Findings}}.</p>{{end}}
<dl class="counts">
<div><dt>findings</dt><dd id="n-findings">{{.Findings}}</dd></div>
{{range .Verdicts}}<div><dt><span class="sw v{{.Index}}"></span>{{.Verdict}}</dt><dd data-verdict="{{.Verdict}}">{{.Count}}</dd></div>
{{end}}<div><dt>records held twice or more</dt><dd id="n-duplicated">{{.Held.Duplicated}}</dd></div>
<div><dt>extra copies</dt><dd id="n-extra">{{.Held.ExtraCopies}}</dd></div>
<div><dt>possibly duplicated records</dt><dd id="n-possibly">{{.Held.Possibly}}</dd></div>
</dl>
</section>

<section id="timeline" aria-label="timeline">
<h2>Timeline</h2>
{{with .Timeline}}{{if .SVG}}
<p class="note">{{if $.TimelineAll}}Produce latency per broker of every answered request over capture time ({{.Buckets}} buckets of {{.Width}}; solid p50, dashed p99, up to {{.YMax}} ms); under it every re-send{{else}}Every re-send over capture time (no latency was handed to the page){{end}}, one row per verdict. Wheel or +/− to zoom, drag or ←/→ to pan; click a mark to open its finding, or, the timeline focused, n and p for the next and previous re-send.</p>
<div class="tlctl" role="toolbar" aria-label="timeline zoom"><button type="button" data-z="in" aria-label="zoom in">+</button><button type="button" data-z="out" aria-label="zoom out">−</button><button type="button" data-z="left" aria-label="pan left">←</button><button type="button" data-z="right" aria-label="pan right">→</button><button type="button" data-z="reset">reset</button><span id="tlrange"></span></div>
<div class="tlwrap" tabindex="0"><div class="ylab" aria-hidden="true"><span>{{.YMax}} ms</span><span>{{.YMid}} ms</span><span>0</span></div>{{.SVG}}</div>
<div class="axis" id="tlaxis">{{range .Axis}}<span>{{.}}</span>{{end}}</div>
<p class="legend">{{range .Legend}}<span><span class="sw" style="background:{{.Colour}}"></span>{{.Name}}</span> {{end}}{{range $.Colours}}<span><span class="sw v{{.Index}}"></span>{{.Verdict}}</span> {{end}}</p>
{{else}}<p>No attempt to draw.</p>{{end}}{{end}}
{{if .MarksOut}}<p class="note" id="marks-out" data-n="{{.MarksOut}}">{{.MarksOut}} more re-sends are not marked (the page marks the first ones).</p>{{end}}
</section>

<section id="findings" aria-label="findings">
<h2>Findings</h2>
{{if .Hidden}}<p class="note">{{.Hidden}} findings of other verdicts are not listed (--verdict); the counts above take all.</p>{{end}}
{{if .Rows}}
<div class="filters"><label>verdict <select id="fv"><option value="">all</option>{{range .Verdicts}}<option>{{.Verdict}}</option>{{end}}</select></label>
<label>search <input id="fq" type="search" placeholder="topic, producer, broker"></label></div>
<div class="scroll"><table id="ft">
<thead><tr><th data-k="n" aria-sort="ascending"><button type="button">#</button></th><th data-k="s"><button type="button">verdict</button></th><th data-k="s"><button type="button">kind</button></th><th data-k="s"><button type="button">topic</button></th><th data-k="n"><button type="button">partition</button></th><th data-k="s"><button type="button">producer</button></th><th data-k="s"><button type="button">broker</button></th><th data-k="n"><button type="button">attempts</button></th><th data-k="n"><button type="button">records</button></th><th data-k="s"><button type="button">first sent (UTC)</button></th></tr></thead>
<tbody>{{range .Rows}}<tr data-verdict="{{.Verdict}}" data-num="{{.Num}}"><td>{{if .Full}}<a href="#f{{.Num}}">{{.Num}}</a>{{else}}{{.Num}}{{end}}</td><td>{{.Verdict}}</td><td>{{.Kind}}</td><td>{{.Topic}}</td><td>{{.Partition}}</td><td>{{.Producer}}</td><td>{{.Broker}}</td><td>{{.Attempts}}</td><td>{{.Records}}</td><td>{{.Time}}</td></tr>
{{end}}</tbody></table></div>
{{if .RowsOut}}<p class="note" id="rows-out" data-n="{{.RowsOut}}">{{.RowsOut}} more findings are not in the table (the page lists the first ones; --format json gives all).</p>{{end}}
{{end}}
{{if .FullOut}}<p class="note" id="full-out" data-n="{{.FullOut}}">{{.FullOut}} findings are not drawn in full (the page draws the first ones; --format json gives all).</p>{{end}}
{{range .Harmful}}{{template "finding" .}}{{end}}
{{if .Harmless}}<details class="harmless" id="harmless"><summary>{{len .Harmless}} harmless findings (deduplicated, single, rejected, or unconfirmed re-sends the broker deduplicates)</summary>
{{range .Harmless}}{{template "finding" .}}{{end}}</details>{{end}}
</section>

<section id="producers" aria-label="producers">
<h2>Producers</h2>
{{range .Producers}}<article class="producer">
<h3>{{.Name}}</h3>
{{if .Software}}<p>{{.Software}}</p>{{end}}
<dl class="settings">{{range .Settings}}<div><dt>{{index . 0}}</dt><dd>{{index . 1}}</dd></div>{{end}}</dl>
{{if .Diagnosis}}<p class="diag">{{.Diagnosis}}</p>{{end}}
{{if .Fix}}<p><strong>Fix:</strong> {{.Fix}}</p>{{end}}
{{if .Latency}}<h4>Latency per broker</h4><p class="note">bars: p50, p99, max</p>{{.Latency}}{{end}}
{{if .Histogram}}<h4>Latency histogram per broker</h4><p class="note">answered requests per octave of latency (a bar from t to 2t), on a scale per broker</p>{{.Histogram}}{{end}}
{{if .Causes}}<h4>Re-sends by cause ({{.Resends}} re-sends of {{.Resent}} batches)</h4><ul class="causes">{{range .Causes}}<li><span class="bar" style="width:{{printf "%.0f" .Width}}%"></span>{{.Cause}}: {{.Count}}</li>{{end}}</ul>{{end}}
</article>
{{else}}<p>No producer profiled.</p>{{end}}
{{if .ProdsOut}}<p class="note">{{.ProdsOut}} more producers are not shown.</p>{{end}}
</section>
</main>
<footer><p>Written by kdupcap from the capture alone; this file needs no network.</p></footer>
<script>` + pageJS + `</script>
</body>
</html>
{{define "finding"}}<details class="finding" id="f{{.Num}}" data-verdict="{{.Verdict}}" data-attempts="{{.Attempts}}"{{if .Harmful}} open{{end}}>
<summary><span class="sw v-{{.Verdict}}"></span>#{{.Num}} {{.Verdict}}: {{.Topic}}[{{.Partition}}], {{.Attempts}} attempts, {{.Records}} records</summary>
<p>{{.Reason}}</p>
<p class="note">{{.Kind}}, matched by {{.Match}}, scope {{.Scope}}; {{.Producer}} to {{.Broker}}{{if .Offsets}}; appended at offsets {{.Offsets}}{{end}}</p>
{{.Lanes}}
<div class="scroll"><table class="attempts"><thead><tr><th>attempt</th><th>conn</th><th>correlation ID</th><th>sent (UTC)</th><th>cause</th><th>answer</th><th>offset</th><th>latency</th><th>timeout</th></tr></thead>
<tbody>{{range .Rows}}<tr><td>{{.N}}</td><td>{{.Conn}}</td><td>{{.Correlation}}</td><td>{{.Time}}</td><td>{{.Cause}}</td><td>{{.Answer}}</td><td>{{.Offset}}</td><td>{{.Latency}}</td><td>{{.TimeoutMs}} ms</td></tr>{{end}}</tbody></table></div>
{{if .Omitted}}<p class="note">{{.Omitted}} later attempts were not kept.</p>{{end}}
{{if .RecordRows}}<div class="scroll"><table class="records"><thead><tr><th>offset delta</th><th>offset</th><th>key</th><th>value</th><th>copies</th></tr></thead><tbody>{{range .RecordRows}}<tr><td>{{.OffsetDelta}}</td><td>{{.Offset}}</td><td>{{.Key}}</td><td>{{.Value}}</td><td>{{if .Copies}}{{.Copies}}{{end}}</td></tr>{{end}}</tbody></table></div>{{if gt .RecsOut 0}}<p class="note">{{.RecsOut}} more records.</p>{{end}}{{end}}
</details>
{{end}}`
