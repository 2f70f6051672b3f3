package html

import (
	"fmt"
	stdhtml "html"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// svgText is SVG drawn here: every text and attribute value in it went
// through esc.
type svgText = template.HTML

func esc(s string) string { return stdhtml.EscapeString(s) }

// num prints a coordinate with at most one decimal.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

// Lanes geometry: the width of a finding's drawing, the left gutter of
// lane names, a lane's height.
const (
	lanesWidth = 800.0
	lanesLeft  = 110.0
	laneHeight = 34.0
)

// drawLanes draws f's attempts on a time axis, one lane per connection:
// a mark at each send, a line to its answer, the request timeout sent to
// the broker as a faint interval and, when the client ended the
// connection with the attempt unanswered, the client's own timeout (from
// the send to its FIN or RST) as an interval above the lane.
func drawLanes(f *detect.Finding) svgText {
	if len(f.Attempts) == 0 {
		return ""
	}
	var conns []uint64
	t0 := f.Attempts[0].Time
	t1 := t0
	for i := range f.Attempts {
		a := &f.Attempts[i]
		if !slices.Contains(conns, a.ConnID) {
			conns = append(conns, a.ConnID)
		}
		t0 = minTime(t0, a.Time)
		t1 = maxTime(t1, a.Time)
		if a.Response != nil {
			t1 = maxTime(t1, a.Response.Time)
		}
		if gaveUp(a) {
			t1 = maxTime(t1, a.End.Time)
		}
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Millisecond
	}
	span = span + span/10
	x := func(t time.Time) float64 {
		return lanesLeft + (lanesWidth-lanesLeft-10)*float64(t.Sub(t0))/float64(span)
	}
	h := laneHeight*float64(len(conns)) + 22
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lanes" viewBox="0 0 %s %s" role="img" aria-label="attempts on a time axis, one lane per connection">`, num(lanesWidth), num(h))
	for li, c := range conns {
		y := laneHeight*float64(li) + laneHeight/2
		fmt.Fprintf(&b, `<text x="4" y="%s" class="lbl">conn %d</text><line x1="%s" x2="%s" y1="%s" y2="%s" class="lane"/>`,
			num(y+4), c, num(lanesLeft), num(lanesWidth-10), num(y), num(y))
	}
	for i := range f.Attempts {
		a := &f.Attempts[i]
		y := laneHeight*float64(slices.Index(conns, a.ConnID)) + laneHeight/2
		xs := x(a.Time)
		if a.TimeoutMillis > 0 {
			xe := min(x(a.Time.Add(time.Duration(a.TimeoutMillis)*time.Millisecond)), lanesWidth-10)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="8" class="timeout"><title>request timeout %d ms</title></rect>`,
				num(xs), num(y+4), num(max(xe-xs, 1)), a.TimeoutMillis)
		}
		if gaveUp(a) {
			xe := min(x(a.End.Time), lanesWidth-10)
			wait := a.End.Time.Sub(a.Time)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="6" class="ctimeout"><title>the client's own timeout: it waited %s ms for an answer, then ended the connection (%s)</title></rect>`,
				num(xs), num(y-10), num(max(xe-xs, 1)), esc(report.MillisText(float64(wait)/1e6)), esc(a.End.String()))
		}
		answer := "no answer: " + string(a.NoResponse)
		cls := "noans"
		if r := a.Response; r != nil {
			xr := x(r.Time)
			answer = fmt.Sprintf("%s, offset %d, %s ms", r.Error, r.BaseOffset, report.MillisText(r.LatencyMillis))
			cls = "ok"
			if r.ErrorCode != 0 {
				cls = "err"
			}
			fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" class="ans %s"/><circle cx="%s" cy="%s" r="4" class="%s"><title>answer to correlation ID %d: %s</title></circle>`,
				num(xs), num(xr), num(y), num(y), cls, num(xr), num(y), cls, a.CorrelationID, esc(answer))
		}
		fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="6" class="send"><title>attempt %d, correlation ID %d, %s: %s; %s</title></circle><text x="%s" y="%s" class="cid">%d</text>`,
			num(xs), num(y), i+1, a.CorrelationID, esc(timeText(a.Time)), esc(causeText(a)), esc(answer), num(xs-4), num(y-9), a.CorrelationID)
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" class="lbl">0</text><text x="%s" y="%s" class="lbl" text-anchor="end">+%s ms</text></svg>`,
		num(lanesLeft), num(h-4), num(lanesWidth-10), num(h-4), esc(report.MillisText(float64(span)/1e6)))
	return svgText(b.String())
}

// gaveUp reports whether the client ended a's connection with a still
// unanswered: the time from its send to that end is the client's own
// timeout, which the page draws as an interval.
func gaveUp(a *detect.Attempt) bool {
	return a.Response == nil && a.End != nil && a.End.By == decode.EndByClient && !a.End.Time.Before(a.Time)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// drawLatency draws a producer's latency per broker: bars of p50, p99
// and the maximum, on a scale common to its brokers.
func drawLatency(ls []profile.BrokerLatency) svgText {
	if len(ls) == 0 {
		return ""
	}
	var most float64
	for _, l := range ls {
		most = max(most, l.MaxMillis)
	}
	most = max(most, 0.001)
	const w, left, row = 600.0, 150.0, 22.0
	h := row*float64(len(ls)) + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lat" viewBox="0 0 %s %s" role="img" aria-label="produce latency per broker">`, num(w), num(h))
	for i, l := range ls {
		y := row * float64(i)
		bx := func(v float64) float64 { return (w - left - 10) * v / most }
		fmt.Fprintf(&b, `<text x="2" y="%s" class="lbl">%s</text>`, num(y+14), esc(l.Broker.String()))
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="14" class="pmax"/><rect x="%s" y="%s" width="%s" height="14" class="p99"/><rect x="%s" y="%s" width="%s" height="14" class="p50"/>`,
			num(left), num(y+2), num(max(bx(l.MaxMillis), 1)), num(left), num(y+2), num(max(bx(l.P99Millis), 1)), num(left), num(y+2), num(max(bx(l.P50Millis), 1)))
		fmt.Fprintf(&b, `<title>%s: %d answered, p50 %s ms, p99 %s ms, max %s ms</title>`,
			esc(l.Broker.String()), l.Answered, report.MillisText(l.P50Millis), report.MillisText(l.P99Millis), report.MillisText(l.MaxMillis))
	}
	b.WriteString(`</svg>`)
	return svgText(b.String())
}

// drawHistograms draws a producer's latency histogram per broker: a bar
// per octave of latency (profile.HistogramBin), on an axis of octaves
// common to its brokers and a count scale per broker.
func drawHistograms(ls []profile.BrokerLatency) svgText {
	// A bin's octave: its upper bound is 2^k µs.
	oct := func(b profile.HistogramBin) int { return int(math.Round(math.Log2(b.HighMillis * 1000))) }
	first, last := math.MaxInt, -1
	var lo, hi float64
	for _, l := range ls {
		if n := len(l.Histogram); n > 0 {
			if k := oct(l.Histogram[0]); k < first {
				first, lo = k, l.Histogram[0].LowMillis
			}
			if k := oct(l.Histogram[n-1]); k > last {
				last, hi = k, l.Histogram[n-1].HighMillis
			}
		}
	}
	if last < 0 {
		return ""
	}
	nb := last - first + 1
	const w, left, row, bh = 600.0, 150.0, 46.0, 30.0
	bw := (w - left - 10) / float64(max(nb, 1))
	h := row*float64(len(ls)) + 14
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="hist" viewBox="0 0 %s %s" role="img" aria-label="produce latency histogram per broker">`, num(w), num(h))
	for i, l := range ls {
		y := row * float64(i)
		fmt.Fprintf(&b, `<text x="2" y="%s" class="lbl">%s</text>`, num(y+bh/2+4), esc(l.Broker.String()))
		var most uint64
		for _, bin := range l.Histogram {
			most = max(most, bin.Count)
		}
		for _, bin := range l.Histogram {
			if bin.Count == 0 {
				continue
			}
			bhv := bh * float64(bin.Count) / float64(most)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" class="hbar" data-n="%d"><title>%s: %d answered in %s to %s</title></rect>`,
				num(left+bw*float64(oct(bin)-first)+1), num(y+bh-bhv+2), num(max(bw-2, 1)), num(max(bhv, 1)), bin.Count,
				esc(l.Broker.String()), bin.Count, esc(msBound(bin.LowMillis)), esc(msBound(bin.HighMillis)))
		}
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" class="lbl">%s</text><text x="%s" y="%s" class="lbl" text-anchor="end">%s</text></svg>`,
		num(left), num(h-2), esc(msBound(lo)), num(w-10), num(h-2), esc(msBound(hi)))
	return svgText(b.String())
}

// msBound prints a bin's bound (a power of two µs) to three significant
// digits in the unit that reads best: 64 µs, 1.02 ms, 524 ms, 2.1 s.
func msBound(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms*1000, 'f', 0, 64) + " µs"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'g', 3, 64) + " ms"
	}
	return strconv.FormatFloat(ms/1000, 'g', 3, 64) + " s"
}

// Timeline geometry: the drawing's width (the viewBox the script zooms),
// the latency chart's height, and the strip of re-send marks under it
// (one row per verdict).
const (
	tlWidth   = 1000.0
	tlChart   = 200.0
	tlMarkRow = 10.0
)

var palette = []string{"#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939"}

// timelineDrawing is the timeline's SVG and its legend.
type timelineDrawing struct {
	SVG     svgText
	Axis    []string // tick labels at 0, 1/4 ... of the width
	YMax    string
	YMid    string
	Legend  []legendItem
	T0Ms    int64 // unix ms of x=0
	SpanMs  float64
	Buckets int
	Width   string
}

type legendItem struct{ Name, Colour string }

func drawTimeline(tl *profile.Timeline, marks []mark, first, last time.Time) timelineDrawing {
	var d timelineDrawing
	if first.IsZero() {
		return d
	}
	span := last.Sub(first)
	if span <= 0 {
		span = time.Millisecond
	}
	// A margin of 2% each side, so that the first and last marks show.
	first = first.Add(-span / 50)
	span += span / 25
	x := func(t time.Time) float64 { return tlWidth * float64(t.Sub(first)) / float64(span) }
	series := tl.Series()
	var most float64
	var answered int64
	for _, s := range series {
		for _, bk := range s.Buckets {
			most = max(most, bk.P99Millis)
			answered += bk.Count
		}
		d.Buckets = max(d.Buckets, len(s.Buckets))
	}
	most = niceCeil(max(most, 0.001))
	d.YMax, d.YMid = report.MillisText(most), report.MillisText(most/2)
	d.T0Ms = first.UnixMilli()
	d.SpanMs = float64(span) / 1e6
	d.Width = tl.Width().String()
	h := tlChart + 8 + tlMarkRow*float64(verdictIndex(detect.Rejected)+1)
	y := func(ms float64) float64 { return tlChart - tlChart*ms/most }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="tl" viewBox="0 0 %s %s" preserveAspectRatio="none" role="img" aria-label="produce latency per broker over capture time, re-sends marked" data-t0="%d" data-span="%s" data-answered="%d">`,
		num(tlWidth), num(h), d.T0Ms, num(d.SpanMs), answered)
	for _, g := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="0" x2="%s" y1="%s" y2="%s" class="grid"/>`, num(tlWidth), num(y(most*g)), num(y(most*g)))
	}
	bw := tl.Width()
	for si, s := range series {
		colour := palette[si%len(palette)]
		name := s.Broker.String()
		if !s.Broker.IsValid() {
			name = "other brokers"
		}
		d.Legend = append(d.Legend, legendItem{Name: name, Colour: colour})
		var p50, p99 strings.Builder
		for _, bk := range s.Buckets {
			mid := x(bk.Start.Add(bw / 2))
			fmt.Fprintf(&p50, "%s,%s ", num(mid), num(y(bk.P50Millis)))
			fmt.Fprintf(&p99, "%s,%s ", num(mid), num(y(bk.P99Millis)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" stroke="%s" class="p50l"><title>%s p50</title></polyline><polyline points="%s" stroke="%s" class="p99l"><title>%s p99</title></polyline>`,
			strings.TrimSpace(p50.String()), colour, esc(name), strings.TrimSpace(p99.String()), colour, esc(name))
		for _, bk := range s.Buckets {
			mid := x(bk.Start.Add(bw / 2))
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2" fill="%s"><title>%s from %s: %d answered, p50 %s ms, p99 %s ms, max %s ms</title></circle>`,
				num(mid), num(y(bk.P99Millis)), colour, esc(name), esc(timeText(bk.Start)), bk.Count, report.MillisText(bk.P50Millis), report.MillisText(bk.P99Millis), report.MillisText(bk.MaxMillis))
		}
	}
	for _, m := range marks {
		my := tlChart + 8 + tlMarkRow*float64(m.verdict)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" class="mk v%d" data-f="%d"/>`, num(x(m.t)), num(x(m.t)), num(my), num(my+tlMarkRow-2), m.verdict, m.num)
	}
	b.WriteString(`</svg>`)
	d.SVG = svgText(b.String())
	for i := range 5 {
		t := first.Add(time.Duration(float64(span) * float64(i) / 4))
		d.Axis = append(d.Axis, t.UTC().Format("15:04:05.000"))
	}
	return d
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
