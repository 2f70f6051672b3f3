package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/capture"
)

// Captures of this repository rewritten the way broken capture setups
// show them (issue 13): segments reordered as a SPAN port or a multi-queue
// capture shows them, and packets cut by a small snap length.

// capturedPacket is one packet of a capture read whole, its bytes copied.
type capturedPacket struct {
	data []byte
	ci   gopacket.CaptureInfo
	link layers.LinkType
}

// readCapture reads every packet of a capture file, and the TLS key logs of
// its pcapng secrets blocks.
func readCapture(t *testing.T, file string) ([]capturedPacket, [][]byte) {
	t.Helper()
	src, err := capture.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []capturedPacket
	for {
		p, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ci := p.CI
		ci.CaptureLength = len(p.Data)
		out = append(out, capturedPacket{data: bytes.Clone(p.Data), ci: ci, link: p.LinkType})
	}
	return out, src.Secrets()
}

// writeCapture writes packets as a pcap (snap length snap), and the key
// logs as a key log file next to it; it returns the flags that read the
// keys (none without key logs).
func writeCapture(t *testing.T, path string, pkts []capturedPacket, snap int, keys [][]byte) []string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	link := pkts[0].link
	if err := w.WriteFileHeader(uint32(snap), link); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if p.link != link {
			t.Fatalf("%s: link types %v and %v: a pcap holds one", path, link, p.link)
		}
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	kl := path + ".keys"
	if err := os.WriteFile(kl, bytes.Join(keys, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--tls-keylog", kl}
}

// reorder swaps every 4th data segment of each direction of each TCP
// connection with the next data segment of that direction; the packets
// without payload (ACKs, SYN, FIN) stay in place, and every packet keeps its
// own timestamp. It returns the number of swaps.
func reorder(t *testing.T, pkts []capturedPacket) ([]capturedPacket, int) {
	t.Helper()
	byDir := map[string][]int{}
	var dirs []string
	for i, p := range pkts {
		pk := gopacket.NewPacket(p.data, p.link, gopacket.NoCopy)
		tcp, _ := pk.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil || len(tcp.Payload) == 0 || pk.NetworkLayer() == nil {
			continue
		}
		key := pk.NetworkLayer().NetworkFlow().String() + " " + tcp.TransportFlow().String()
		if _, ok := byDir[key]; !ok {
			dirs = append(dirs, key)
		}
		byDir[key] = append(byDir[key], i)
	}
	out := append([]capturedPacket(nil), pkts...)
	swaps := 0
	for _, key := range dirs {
		idx := byDir[key]
		for k := 3; k+1 < len(idx); k += 4 {
			out[idx[k]], out[idx[k+1]] = pkts[idx[k+1]], pkts[idx[k]]
			swaps++
		}
	}
	return out, swaps
}

// analyzeLines runs analyze in JSON on a file and returns its output lines
// but the summary, and the summary.
func analyzeLines(t *testing.T, file string, extra ...string) ([]string, map[string]any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"analyze", "--format", "json", "--quiet"}, extra...)
	if code := run(append(args, file), nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("%s: exit %d, stderr: %s", file, code, stderr.String())
	}
	var lines []string
	var sum map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if strings.HasPrefix(l, `{"type":"summary"`) {
			if err := json.Unmarshal([]byte(l), &sum); err != nil {
				t.Fatal(err)
			}
			continue
		}
		lines = append(lines, l)
	}
	if sum == nil {
		t.Fatalf("%s: no summary in %s", file, stdout.String())
	}
	return lines, sum
}

// namedElsewhere are the captures whose findings name a topic (by ID on
// the wire) from a Metadata exchange on another connection that the
// reordering moves after the produce requests: the swapped segment there is
// the next one of its connection, 0.7 s later. The reorder window gives
// every byte in place, but decode names a topic when it reads the produce
// request, so the name is compared as the ID; the rest byte for byte.
var namedElsewhere = map[string]bool{"kgo-tls13-nonidempotent-timeout.pcapng": true}

// topicByID names a finding's topic by its ID, when it has one.
var topicByID = regexp.MustCompile(`"topic":"[^"]*","topic_id":"([^"]+)"`)

// TestReorderedCaptures: every capture of this repository with every 4th
// data segment of each direction swapped with the next one gives the
// findings (and producer lines) of the untouched capture, byte for byte,
// and no gap more; with no reorder window it does not.
func TestReorderedCaptures(t *testing.T) {
	// Captures whose reordering the window had to mend: without it they
	// lose bytes (more gaps) or findings. Without any, the test would
	// prove nothing about the window.
	mended, swapped := 0, 0
	defer func() {
		if !t.Failed() && (swapped < 3 || mended == 0) {
			t.Errorf("%d captures reordered, %d of them needing the window: the test does not exercise it", swapped, mended)
		}
	}()
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			pkts, keys := readCapture(t, file)
			re, swaps := reorder(t, pkts)
			if swaps == 0 {
				t.Log("no segment swapped: no direction has 5 data segments")
			}
			path := filepath.Join(t.TempDir(), "reordered.pcap")
			flags := writeCapture(t, path, re, 262144, keys)
			want, wantSum := analyzeLines(t, file)
			for _, workers := range []string{"1", "2"} {
				got, sum := analyzeLines(t, path, append(flags, "--workers", workers)...)
				g, w := strings.Join(got, "\n"), strings.Join(want, "\n")
				if namedElsewhere[filepath.Base(file)] {
					g, w = topicByID.ReplaceAllString(g, `"topic":"$1","topic_id":"$1"`), topicByID.ReplaceAllString(w, `"topic":"$1","topic_id":"$1"`)
				}
				if g != w {
					t.Errorf("workers %s, %d swaps: findings differ from the untouched capture's\n got:\n%s\nwant:\n%s", workers, swaps, g, w)
				}
				if sum["gaps"] != wantSum["gaps"] || sum["findings"] != wantSum["findings"] {
					t.Errorf("workers %s: gaps %v findings %v, want %v and %v", workers, sum["gaps"], sum["findings"], wantSum["gaps"], wantSum["findings"])
				}
			}
			// Without a reorder window, the same capture loses bytes.
			_, sum := analyzeLines(t, path, append(flags, "--reorder-window", "0")...)
			t.Logf("%d swaps; with no reorder window: gaps %v, findings %v (want %v)", swaps, sum["gaps"], sum["findings"], wantSum["findings"])
			if swaps > 0 {
				swapped++
				if sum["gaps"] != wantSum["gaps"] || sum["findings"] != wantSum["findings"] {
					mended++
				} else {
					t.Errorf("%d swaps, yet with no reorder window the same gaps and findings: the swaps do not exercise the window", swaps)
				}
			}
		})
	}
}
