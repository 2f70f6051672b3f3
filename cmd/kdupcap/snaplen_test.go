package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// claim is what a finding line asserts, for comparing the findings of a
// cut capture with the untouched one's.
type claim struct {
	Type      string `json:"type"`
	Client    string `json:"client"`
	Broker    string `json:"broker"`
	TopicID   any    `json:"topic_id"`
	Partition int32  `json:"partition"`
	BatchCRC  string `json:"batch_crc"`
	Verdict   string `json:"verdict"`
	Offsets   []int  `json:"appended_offsets"`
}

// claims are the finding lines of analyze's JSON output (producer lines are
// not findings).
func claims(t *testing.T, lines []string) []claim {
	t.Helper()
	var out []claim
	for _, l := range lines {
		var c claim
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		if c.Type != "producer" {
			out = append(out, c)
		}
	}
	return out
}

// supported reports whether the untouched capture's findings support c: one
// of them makes the same claim about the same batch, or a stronger one
// (duplicated where c says only unconfirmed).
func supported(c claim, by []claim) bool {
	for _, o := range by {
		if o.Type != c.Type || o.Client != c.Client || o.Broker != c.Broker || o.BatchCRC != c.BatchCRC ||
			o.Partition != c.Partition || fmt.Sprint(o.TopicID) != fmt.Sprint(c.TopicID) {
			continue
		}
		if o.Verdict == c.Verdict && fmt.Sprint(o.Offsets) == fmt.Sprint(c.Offsets) ||
			c.Verdict == "unconfirmed" && (o.Verdict == "duplicated" || o.Verdict == "unconfirmed") {
			return true
		}
	}
	return false
}

// TestSnapLengthCaptures: every capture of this repository with every packet
// cut to 96 and to 200 bytes, as `tcpdump -s 96` takes it: analyze says so in
// one line of the summary (the snap length, the bytes lost, capture again
// with -s 0), exits 0, and claims no finding that the untouched capture's
// findings do not support (with 96 bytes there may be none at all).
func TestSnapLengthCaptures(t *testing.T) {
	for _, file := range captureFiles(t) {
		pkts, keys := readCapture(t, file)
		wantLines, _ := analyzeLines(t, file)
		want := claims(t, wantLines)
		for _, snap := range []int{96, 200} {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(file), snap), func(t *testing.T) {
				cut := make([]capturedPacket, len(pkts))
				var lost, n int
				for i, p := range pkts {
					cut[i] = p
					if len(p.data) > snap {
						cut[i].data = p.data[:snap]
						cut[i].ci.CaptureLength = snap
						lost += p.ci.Length - snap
						n++
					}
				}
				path := filepath.Join(t.TempDir(), "cut.pcap")
				flags := writeCapture(t, path, cut, snap, keys)
				lines, sum := analyzeLines(t, path, flags...)
				for _, c := range claims(t, lines) {
					if !supported(c, want) {
						t.Errorf("finding not supported by the untouched capture's: %+v", c)
					}
				}
				if n == 0 {
					// No packet of the capture is that long.
					if _, ok := sum["snap_len"]; ok || len(claims(t, lines)) != len(want) {
						t.Errorf("nothing cut, yet snap_len %v and %d findings (want %d)", sum["snap_len"], len(claims(t, lines)), len(want))
					}
					return
				}
				if sum["snap_len"] != float64(snap) || sum["snap_cut_bytes"] != float64(lost) || sum["snap_cut_packets"] != float64(n) {
					t.Errorf("summary snap_len %v snap_cut_bytes %v snap_cut_packets %v, want %d, %d, %d",
						sum["snap_len"], sum["snap_cut_bytes"], sum["snap_cut_packets"], snap, lost, n)
				}
				var stdout, stderr bytes.Buffer
				if code := run(append(append([]string{"analyze", "--quiet"}, flags...), path), nil, &stdout, &stderr); code != exitOK {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				line := fmt.Sprintf("capture cut at %d bytes per packet: %d bytes lost in %d packets; capture again with tcpdump -s 0", snap, lost, n)
				if !strings.Contains(stdout.String(), line) {
					t.Errorf("no line %q in the summary:\n%s", line, stdout.String())
				}
				t.Logf("%d findings (untouched: %d)", len(claims(t, lines)), len(want))
			})
		}
	}
}

// TestSnapLengthUncut: an untouched capture's summary says nothing of a
// snap length (the goldens hold that too).
func TestSnapLengthUncut(t *testing.T) {
	file := captureFiles(t)[0]
	_, sum := analyzeLines(t, file)
	for _, k := range []string{"snap_len", "snap_cut_bytes", "snap_cut_packets"} {
		if _, ok := sum[k]; ok {
			t.Errorf("summary has %s: %v", k, sum[k])
		}
	}
}
