package main

import (
	"bufio"
	"bytes"
	"encoding/json"
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
			var answered, findingAnswers int64
			sc := bufio.NewScanner(&stdout)
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				var line struct {
					Type     string                     `json:"type"`
					Latency  []struct{ Answered int64 } `json:"latency"`
					Attempts []struct {
						Response *json.RawMessage `json:"response"`
					} `json:"attempts"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatal(err)
				}
				switch line.Type {
				case "producer":
					for _, l := range line.Latency {
						answered += l.Answered
					}
				case "summary":
				default:
					for _, a := range line.Attempts {
						if a.Response != nil {
							findingAnswers++
						}
					}
				}
			}
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
			t.Logf("%d answered requests, %d of them answers to findings' attempts", answered, findingAnswers)
			if answered == 0 {
				t.Fatal("no answered request in the JSON output's producers")
			}
			if timeline != answered {
				t.Errorf("timeline counts %d answered requests, the producers %d (the findings' attempts %d)", timeline, answered, findingAnswers)
			}
			if bars != answered {
				t.Errorf("histograms count %d answered requests, the producers %d", bars, answered)
			}
		})
	}
}
