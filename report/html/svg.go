package html

import (
	"fmt"
	stdhtml "html"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
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
// a mark at each send, a line to its answer, the request timeout as a
// faint interval.
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
		answer := "no answer: " + string(a.NoResponse)
		cls := "noans"
		if r := a.Response; r != nil {
			xr := x(r.Time)
			answer = fmt.Sprintf("%s, offset %d, %s ms", r.Error, r.BaseOffset, msText(r.LatencyMillis))
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
		num(lanesLeft), num(h-4), num(lanesWidth-10), num(h-4), esc(msText(float64(span)/1e6)))
	return svgText(b.String())
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
			esc(l.Broker.String()), l.Answered, msText(l.P50Millis), msText(l.P99Millis), msText(l.MaxMillis))
	}
	b.WriteString(`</svg>`)
	return svgText(b.String())
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
	for _, s := range series {
		for _, bk := range s.Buckets {
			most = max(most, bk.P99Millis)
		}
		d.Buckets = max(d.Buckets, len(s.Buckets))
	}
	most = niceCeil(max(most, 0.001))
	d.YMax, d.YMid = msText(most), msText(most/2)
	d.T0Ms = first.UnixMilli()
	d.SpanMs = float64(span) / 1e6
	d.Width = tl.Width().String()
	h := tlChart + 8 + tlMarkRow*float64(verdictIndex(detect.Rejected)+1)
	y := func(ms float64) float64 { return tlChart - tlChart*ms/most }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="tl" viewBox="0 0 %s %s" preserveAspectRatio="none" role="img" aria-label="produce latency per broker over capture time, re-sends marked" data-t0="%d" data-span="%s">`,
		num(tlWidth), num(h), d.T0Ms, num(d.SpanMs))
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
				num(mid), num(y(bk.P99Millis)), colour, esc(name), esc(timeText(bk.Start)), bk.Count, msText(bk.P50Millis), msText(bk.P99Millis), msText(bk.MaxMillis))
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
