package html

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// TestClientTimeoutInterval: the client's own timeout is drawn, from the
// send to the connection's end, only when the client ended the connection
// of an unanswered attempt; an answered attempt, or one whose connection
// the broker ended, draws none (that would blame the client's timeout for
// what the broker did).
func TestClientTimeoutInterval(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		end     *decode.ConnEnd
		answer  bool
		want    bool
		waitTxt string
	}{
		{"client FIN, unanswered", &decode.ConnEnd{By: decode.EndByClient, How: decode.EndFIN, Time: t0.Add(1500 * time.Millisecond)}, false, true, "waited 1500.000 ms"},
		{"client RST, unanswered", &decode.ConnEnd{By: decode.EndByClient, How: decode.EndRST, Time: t0.Add(200 * time.Millisecond)}, false, true, "waited 200.000 ms"},
		{"broker FIN", &decode.ConnEnd{By: decode.EndByBroker, How: decode.EndFIN, Time: t0.Add(time.Second)}, false, false, ""},
		{"answered, then client FIN", &decode.ConnEnd{By: decode.EndByClient, How: decode.EndFIN, Time: t0.Add(time.Second)}, true, false, ""},
		{"end of capture", &decode.ConnEnd{How: decode.EndOfCapture, Time: t0.Add(time.Second)}, false, false, ""},
		{"no end", nil, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFinding(0, t0, 0)
			a := &f.Attempts[0]
			a.Time, a.End = t0, tt.end
			if !tt.answer {
				a.Response, a.NoResponse = nil, "connection_closed"
			}
			svg := string(drawLanes(&f))
			if got := strings.Contains(svg, `class="ctimeout"`); got != tt.want {
				t.Fatalf("client timeout drawn %v, want %v:\n%s", got, tt.want, svg)
			}
			if tt.want && !strings.Contains(svg, tt.waitTxt) {
				t.Errorf("the interval does not say %q:\n%s", tt.waitTxt, svg)
			}
		})
	}
}

// TestRunTimeline: the latency drawn is the Timeline handed to the writer,
// and the page says it is of every answered request; without one, the
// page draws the re-sends alone and says so.
func TestRunTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	broker := netip.MustParseAddrPort("10.0.0.9:9092")
	tl := profile.NewTimeline(8)
	for i := range 40 {
		tl.Add(broker, t0.Add(time.Duration(i)*100*time.Millisecond), 3*time.Millisecond)
	}
	for _, run := range []bool{false, true} {
		var b bytes.Buffer
		w := New(&b, Options{})
		if err := w.Finding(testFinding(1, t0, 0)); err != nil {
			t.Fatal(err)
		}
		if run {
			if err := w.Timeline(tl); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Summary(report.Summary{Findings: 1}); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		checkPage(t, b.Bytes())
		wantAnswered, wantNote := `data-answered="0"`, "no latency was handed to the page"
		if run {
			wantAnswered, wantNote = `data-answered="40"`, "every answered request"
		}
		if !strings.Contains(page, wantAnswered) || !strings.Contains(page, wantNote) {
			t.Errorf("run timeline %v: want %s and %q in the page", run, wantAnswered, wantNote)
		}
		if run != strings.Contains(page, "10.0.0.9:9092") {
			t.Errorf("run timeline %v: its broker shown %v", run, !run)
		}
	}
}

// TestHistograms: each broker's bars hold its answered requests, on an
// axis of octaves common to the producer's brokers.
func TestHistograms(t *testing.T) {
	var fast, slow profile.Sketch
	for i := range 10 {
		fast.Add(time.Duration(1+i) * 100 * time.Microsecond)
	}
	for i := range 5 {
		slow.Add(time.Duration(1+i) * 300 * time.Millisecond)
	}
	ls := []profile.BrokerLatency{
		{Broker: netip.MustParseAddrPort("10.0.0.1:9092"), Answered: 10, Histogram: fast.Histogram()},
		{Broker: netip.MustParseAddrPort("10.0.0.2:9092"), Answered: 5, Histogram: slow.Histogram()},
	}
	svg := string(drawHistograms(ls))
	if n := strings.Count(svg, `class="hbar"`); n < 4 {
		t.Errorf("%d bars drawn, want one per non-empty octave of each broker:\n%s", n, svg)
	}
	for _, want := range []string{">64 µs<", ">2.1 s<", "10.0.0.1:9092: 5 answered in 512 µs to 1.02 ms", "10.0.0.2:9092: 2 answered in 524 ms to 1.05 s"} {
		if !strings.Contains(svg, want) {
			t.Errorf("histogram does not say %q:\n%s", want, svg)
		}
	}
	if drawHistograms(nil) != "" || drawHistograms([]profile.BrokerLatency{{Answered: 0}}) != "" {
		t.Error("an empty histogram is drawn")
	}
	_ = detect.Duplicated
}
