package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestHTMLReport: the --html page of each testdata capture parses, fetches
// nothing, and shows the numbers of the JSON output of the same run:
// findings per verdict, the records held twice, each finding's attempts.
func TestHTMLReport(t *testing.T) {
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"analyze", "--format", "json", "--records", "5", "--html", page, file}, nil, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes", len(b))
			got := readPage(t, b)
			want := readJSON(t, stdout.Bytes())
			for k, v := range want.numbers {
				if got.numbers[k] != v {
					t.Errorf("%s: page %q, JSON %q", k, got.numbers[k], v)
				}
			}
			if len(got.attempts) != len(want.attempts) {
				t.Fatalf("%d findings drawn, JSON %d", len(got.attempts), len(want.attempts))
			}
			for i := range want.attempts {
				if got.attempts[i] != want.attempts[i] {
					t.Errorf("finding %d: %d attempts drawn, JSON %d", i+1, got.attempts[i], want.attempts[i])
				}
			}
		})
	}
}

// TestHTMLInputFile: --html refuses to overwrite an input file, before
// reading it.
func TestHTMLInputFile(t *testing.T) {
	file := captureFiles(t)[0]
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"analyze", "--html", file, file}, nil, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "is an input file") {
		t.Errorf("--html of an input file: exit %d, %q", code, stderr.String())
	}
	if after, err := os.ReadFile(file); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the input file changed (%v)", err)
	}
}

// TestHTMLOutputFile: --html refuses an input however it is spelled (dir/./x
// for dir/x, a symlink, a hard link), even with --force; an existing file
// only with --force, which overwrites it; each refusal is one line, before
// reading, and leaves the file as it was.
func TestHTMLOutputFile(t *testing.T) {
	capture, err := os.ReadFile(captureFiles(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Repeat([]byte("an older page\n"), 1<<16) // longer than the new one
	tests := []struct {
		name  string
		page  func(dir, input string) string // makes the --html FILE
		force bool
		want  string // stderr, or "" for a page written over the old one
	}{
		{"input as dir/./x", func(dir, _ string) string { return dir + "/./in.pcap" }, false, "%s is an input file"},
		{"input as dir/./x, --force", func(dir, _ string) string { return dir + "/./in.pcap" }, true, "%s is an input file"},
		{"symlink to the input, --force", func(dir, input string) string {
			p := filepath.Join(dir, "link.html")
			if err := os.Symlink(input, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, true, "%s is an input file"},
		{"relative symlink to the input", func(dir, _ string) string {
			p := filepath.Join(dir, "rel.html")
			if err := os.Symlink("in.pcap", p); err != nil {
				t.Fatal(err)
			}
			return p
		}, false, "%s is an input file"},
		{"hard link to the input, --force", func(dir, input string) string {
			p := filepath.Join(dir, "hard.html")
			if err := os.Link(input, p); err != nil {
				t.Skipf("no hard link here: %v", err)
			}
			return p
		}, true, "%s is an input file"},
		{"existing file", func(dir, _ string) string {
			p := filepath.Join(dir, "old.html")
			if err := os.WriteFile(p, old, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, false, "%s: file exists; give --force to overwrite it"},
		{"existing file, --force", func(dir, _ string) string {
			p := filepath.Join(dir, "old.html")
			if err := os.WriteFile(p, old, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			input := filepath.Join(dir, "in.pcap")
			if err := os.WriteFile(input, capture, 0o644); err != nil {
				t.Fatal(err)
			}
			page := tt.page(dir, input)
			before, _ := os.ReadFile(page)
			args := []string{"analyze", "--format", "json", "--html", page}
			if tt.force {
				args = append(args, "--force")
			}
			var stdout, stderr bytes.Buffer
			code := run(append(args, input), nil, &stdout, &stderr)
			if got, _ := os.ReadFile(input); !bytes.Equal(got, capture) {
				t.Fatal("the input changed")
			}
			if tt.want != "" {
				want := "kdupcap analyze: --html: " + fmt.Sprintf(tt.want, page) + "\n"
				if code != exitUsage || stderr.String() != want || stdout.Len() > 0 {
					t.Errorf("exit %d, stdout %d bytes, stderr %q; want exit %d, only %q", code, stdout.Len(), stderr.String(), exitUsage, want)
				}
				if after, err := os.ReadFile(page); err != nil || !bytes.Equal(after, before) {
					t.Errorf("the file changed (%v)", err)
				}
				return
			}
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			got, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(got, []byte("an older page")) || !bytes.HasPrefix(bytes.ToLower(got), []byte("<!doctype html")) {
				t.Errorf("the page was not written over the old file: %d bytes, %.40q", len(got), got)
			}
		})
	}
}

type pageNumbers struct {
	numbers  map[string]string // verdict or count name: its number
	attempts []int             // per finding, in order
	kept     []int             // per finding, the attempts kept (readJSON: attempts_omitted left out)
	// answered is the answered requests of the producer profiles, summed
	// over their brokers (readJSON only).
	answered int64
}

// readPage parses b as HTML, fails on any http(s) src or href, and reads
// the numbers the page shows.
func readPage(t *testing.T, b []byte) pageNumbers {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("page does not parse: %v", err)
	}
	p := pageNumbers{numbers: map[string]string{}}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			attrs := map[string]string{}
			for _, a := range n.Attr {
				attrs[a.Key] = a.Val
				if (a.Key == "src" || a.Key == "href") && strings.Contains(strings.ToLower(a.Val), "//") {
					t.Errorf("<%s %s=%q>: the page must fetch nothing", n.Data, a.Key, a.Val)
				}
			}
			if n.Data == "link" || (n.Data == "script" && attrs["src"] != "") {
				t.Errorf("<%s>: the page must fetch nothing", n.Data)
			}
			if n.Data == "dd" && n.FirstChild != nil {
				if v := attrs["data-verdict"]; v != "" {
					p.numbers[v] = n.FirstChild.Data
				}
				if id := attrs["id"]; id != "" {
					p.numbers[id] = n.FirstChild.Data
				}
			}
			if n.Data == "details" && attrs["data-attempts"] != "" {
				k, err := strconv.Atoi(attrs["data-attempts"])
				if err != nil {
					t.Errorf("data-attempts %q", attrs["data-attempts"])
				}
				num, _ := strconv.Atoi(strings.TrimPrefix(attrs["id"], "f"))
				for len(p.attempts) < num {
					p.attempts = append(p.attempts, -1)
				}
				p.attempts[num-1] = k
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if bytes.Contains(b, []byte("url(http")) || bytes.Contains(b, []byte("@import")) {
		t.Error("the page's style fetches something")
	}
	return p
}

// readJSON reads the same numbers from analyze's JSON Lines.
func readJSON(t *testing.T, b []byte) pageNumbers {
	t.Helper()
	p := pageNumbers{numbers: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Type      string            `json:"type"`
			Attempts  []json.RawMessage `json:"attempts"`
			Omitted   int               `json:"attempts_omitted"`
			ByVerdict map[string]int64  `json:"by_verdict"`
			Findings  int64             `json:"findings"`
			Dup       int64             `json:"duplicated_records"`
			Extra     int64             `json:"extra_copies"`
			Possibly  int64             `json:"possibly_duplicated_records"`
			Latency   []struct {
				Answered int64 `json:"answered"`
			} `json:"latency"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("JSON line %q: %v", sc.Text(), err)
		}
		switch line.Type {
		case "summary":
			for v, n := range line.ByVerdict {
				p.numbers[v] = strconv.FormatInt(n, 10)
			}
			p.numbers["n-findings"] = strconv.FormatInt(line.Findings, 10)
			p.numbers["n-duplicated"] = strconv.FormatInt(line.Dup, 10)
			p.numbers["n-extra"] = strconv.FormatInt(line.Extra, 10)
			p.numbers["n-possibly"] = strconv.FormatInt(line.Possibly, 10)
		case "producer":
			for _, l := range line.Latency {
				p.answered += l.Answered
			}
		default:
			p.attempts = append(p.attempts, len(line.Attempts)+line.Omitted)
			p.kept = append(p.kept, len(line.Attempts))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.numbers["n-findings"]; !ok {
		t.Fatal("no summary line in the JSON output")
	}
	return p
}

// pixelVariance is the variance of the luminance of a PNG's pixels: 0 for
// a blank image.
func pixelVariance(t *testing.T, name string) float64 {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 800 {
		t.Errorf("screenshot %v, want 1280x800", b.Size())
	}
	var sum, sq, n float64
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			sum += l
			sq += l * l
			n++
		}
	}
	mean := sum / n
	return sq/n - mean*mean
}

// TestHTMLFormat: --format html writes to standard output the very page
// --html FILE writes, and nothing else.
func TestHTMLFormat(t *testing.T) {
	for _, file := range captureFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			var stdout, stderr, discard bytes.Buffer
			if code := run([]string{"analyze", "--format", "html", file}, nil, &stdout, &stderr); code != exitOK {
				t.Fatalf("--format html exited %d: %s", code, stderr.String())
			}
			if code := run([]string{"analyze", "--html", page, file}, nil, &discard, &stderr); code != exitOK {
				t.Fatalf("--html exited %d: %s", code, stderr.String())
			}
			want, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("--format html wrote %d bytes, --html %d: not the same page", stdout.Len(), len(want))
			}
		})
	}
}
