package main

import (
	"bytes"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// layoutChecks checks a loaded report in tb, as the issue asks of the
// page beyond its numbers: at a phone's width (390 px) the page itself
// does not scroll sideways (wide tables scroll in their own box) and the
// timeline fits the screen; printed (the print media emulated, then
// Page.printToPDF), the timeline keeps its drawing and marks at a
// readable size, the zoom controls and filters are hidden, and the PDF is
// made; from the keyboard alone (keyboardChecks) the timeline zooms and
// steps to a re-send's finding. It leaves the tab at 1280x800 on screen
// media.
func layoutChecks(t *testing.T, tb *tab) {
	t.Helper()
	type box struct {
		PageWidth, ViewWidth float64
		TimelineW, TimelineH float64
		Marks                int
		Controls, Filters    string
	}
	measure := func() box {
		t.Helper()
		b, err := chromedp.Run(tb.ctx, chromedp.Evaluate[box](`(() => {
			const tl = document.getElementById("tl");
			const r = tl ? tl.getBoundingClientRect() : {width: 0, height: 0};
			const disp = sel => { const e = document.querySelector(sel); return e ? getComputedStyle(e).display : "absent"; };
			return {PageWidth: document.documentElement.scrollWidth, ViewWidth: document.documentElement.clientWidth,
				TimelineW: r.width, TimelineH: r.height,
				Marks: tl ? tl.querySelectorAll(".mk").length : 0,
				Controls: disp(".tlctl"), Filters: disp(".filters")};
		})()`))
		if err != nil {
			t.Fatalf("measuring the page: %v", err)
		}
		return b
	}
	wide := measure()
	if wide.TimelineW == 0 {
		return // no timeline: nothing was sent
	}

	if _, err := chromedp.Run(tb.ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	phone := measure()
	if phone.PageWidth > phone.ViewWidth+1 {
		t.Errorf("at 390 px the page is %v px wide: it scrolls sideways", phone.PageWidth)
	}
	if phone.TimelineW > phone.ViewWidth || phone.TimelineW < 300 {
		t.Errorf("at 390 px the timeline is %v px wide (the screen %v)", phone.TimelineW, phone.ViewWidth)
	}

	if _, err := chromedp.Run(tb.ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		t.Fatal(err)
	}
	printed := measure()
	if printed.TimelineW < 500 || printed.TimelineH < 150 || printed.Marks != wide.Marks {
		t.Errorf("printed, the timeline is %vx%v px with %d marks (on screen %vx%v, %d marks)",
			printed.TimelineW, printed.TimelineH, printed.Marks, wide.TimelineW, wide.TimelineH, wide.Marks)
	}
	if printed.Controls != "none" || printed.Filters != "none" && printed.Filters != "absent" {
		t.Errorf("printed, the zoom controls show as %q and the filters as %q: want them hidden", printed.Controls, printed.Filters)
	}
	pdf, err := chromedp.Call(tb.ctx, page.PrintToPDF, page.PrintToPDFParams{})
	if err != nil {
		t.Fatalf("printing to PDF: %v", err)
	}
	if !bytes.HasPrefix(pdf.Data, []byte("%PDF-")) || len(pdf.Data) < 10000 {
		t.Errorf("the PDF is %d bytes, starting %q", len(pdf.Data), pdf.Data[:min(len(pdf.Data), 8)])
	}
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	keyboardChecks(t, tb)
}

// keyboardChecks uses the timeline with keys only: Tab-focusable, + zooms
// in (the viewBox narrows), 0 resets, n opens the finding of the first
// re-send in time, as a click on its mark does.
func keyboardChecks(t *testing.T, tb *tab) {
	t.Helper()
	width := func() float64 {
		w, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`document.getElementById("tl").viewBox.baseVal.width`))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if err := chromedp.Do(tb.ctx, chromedp.Focus(".tlwrap")); err != nil {
		t.Fatalf("focusing the timeline: %v", err)
	}
	before := width()
	if err := chromedp.Do(tb.ctx, chromedp.KeyEvent("+")); err != nil {
		t.Fatal(err)
	}
	if after := width(); after >= before {
		t.Errorf("+ on the focused timeline: viewBox width %v, before %v", after, before)
	}
	first, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`(() => {
		const ms = [...document.querySelectorAll("#tl .mk")].sort((a, b) => a.x1.baseVal.value - b.x1.baseVal.value);
		return ms.length ? "f" + ms[0].dataset.f : "";
	})()`))
	if err != nil || first == "" {
		t.Fatalf("the first mark: %q, %v", first, err)
	}
	// Undo what the clicks before did: every finding closed and plain,
	// the harmless ones folded, the page at its top.
	if _, err := chromedp.Run(tb.ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelectorAll("details.finding, details.harmless").forEach(d => { d.open = false; d.classList.remove("hl"); });
		window.scrollTo(0, 0);
	})()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tb.ctx, chromedp.KeyEvent("0"), chromedp.KeyEvent("n")); err != nil {
		t.Fatal(err)
	}
	if w := width(); w != before {
		t.Errorf("0 did not reset the zoom: viewBox width %v, want %v", w, before)
	}
	if err := shown(tb, first); err != nil {
		t.Errorf("n on the focused timeline: %v", err)
	}
}
