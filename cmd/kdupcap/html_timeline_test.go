package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/net/html"
)

// TestHTMLTimelineAll: the page's timeline and latency histograms count
// every answered produce request of the run, not only the findings'
// attempts: the timeline's total, and the bars of each producer's
// histograms together, equal the answered requests of the JSON output's
// producer profiles, summed over their brokers.
func TestHTMLTimelineAll(t *testing.T) {
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"analyze", "--format", "json", "--html", page, file}, nil, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			want := readJSON(t, stdout.Bytes())
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := html.Parse(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			timeline, bars := int64(-1), int64(0)
			var walk func(n *html.Node)
			walk = func(n *html.Node) {
				for _, a := range n.Attr {
					v, _ := strconv.ParseInt(a.Val, 10, 64)
					switch {
					case a.Key == "data-answered" && n.Data == "svg":
						timeline = v
					case a.Key == "data-n" && n.Data == "rect":
						bars += v
					}
				}
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c)
				}
			}
			walk(doc)
			if want.answered == 0 {
				t.Fatal("no answered request in the JSON output's producers")
			}
			if timeline != want.answered {
				t.Errorf("timeline counts %d answered requests, the producers %d", timeline, want.answered)
			}
			if bars != want.answered {
				t.Errorf("histograms count %d answered requests, the producers %d", bars, want.answered)
			}
		})
	}
}
