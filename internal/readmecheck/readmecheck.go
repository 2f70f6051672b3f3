package readmecheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// markerPrefix opens a marker comment.
const markerPrefix = "<!-- readme-check:"

// Marker is what a marker comment asks for.
type Marker struct {
	Args   []string // the binary's arguments
	Ranges [][2]int // line ranges to keep, 1-based inclusive; end 0 is the last line; none: all
	Dir    string   // where to run, relative to the Markdown file; "" is its directory
}

// Block is one marked code block of a Markdown file.
type Block struct {
	Marker Marker
	Line   int      // the marker's line, 1-based
	Body   []string // the code block's lines between the fences
	start  int      // index of the first body line
	end    int      // index of the closing fence
}

// Parse finds the marked blocks of a Markdown document: a marker line,
// then (after blank lines at most) a fenced block.
func Parse(doc []byte) ([]Block, error) {
	lines := strings.Split(string(doc), "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, markerPrefix) {
			continue
		}
		if !strings.HasSuffix(l, "-->") {
			return nil, fmt.Errorf("line %d: marker not closed with -->", i+1)
		}
		m, err := parseMarker(strings.TrimSuffix(strings.TrimPrefix(l, markerPrefix), "-->"))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j >= len(lines) || !strings.HasPrefix(lines[j], "```") {
			return nil, fmt.Errorf("line %d: marker not followed by a fenced code block", i+1)
		}
		k := j + 1
		for k < len(lines) && !strings.HasPrefix(lines[k], "```") {
			k++
		}
		if k >= len(lines) {
			return nil, fmt.Errorf("line %d: code block not closed", j+1)
		}
		out = append(out, Block{Marker: m, Line: i + 1, Body: lines[j+1 : k], start: j + 1, end: k})
		i = k
	}
	return out, nil
}

// parseMarker reads "ARGS; lines A-B,C-$; dir D".
func parseMarker(s string) (Marker, error) {
	var m Marker
	parts := strings.Split(s, ";")
	m.Args = strings.Fields(parts[0])
	if len(m.Args) == 0 {
		return m, errors.New("marker without arguments")
	}
	for _, p := range parts[1:] {
		f := strings.Fields(p)
		if len(f) != 2 {
			return m, fmt.Errorf("marker option %q: want NAME VALUE", strings.TrimSpace(p))
		}
		switch f[0] {
		case "dir":
			m.Dir = f[1]
		case "lines":
			for _, r := range strings.Split(f[1], ",") {
				a, b, ok := strings.Cut(r, "-")
				from, err := strconv.Atoi(a)
				if err != nil || from < 1 {
					return m, fmt.Errorf("line range %q", r)
				}
				to := from
				switch {
				case !ok:
				case b == "$":
					to = 0
				default:
					if to, err = strconv.Atoi(b); err != nil || to < from {
						return m, fmt.Errorf("line range %q", r)
					}
				}
				m.Ranges = append(m.Ranges, [2]int{from, to})
			}
		default:
			return m, fmt.Errorf("unknown marker option %q", f[0])
		}
	}
	return m, nil
}

// Render cuts out to m's ranges, a line "..." standing for each stretch
// left out between or after them.
func Render(m Marker, out []byte) []string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(m.Ranges) == 0 {
		return lines
	}
	var got []string
	next := 1 // the first line not shown yet
	for _, r := range m.Ranges {
		from, to := r[0], r[1]
		if to == 0 || to > len(lines) {
			to = len(lines)
		}
		if from > to {
			continue
		}
		if from > next {
			got = append(got, "...")
		}
		got = append(got, lines[from-1:to]...)
		next = to + 1
	}
	if next <= len(lines) {
		got = append(got, "...")
	}
	return got
}

// Runner runs the binary with args in dir and returns its standard output.
type Runner func(ctx context.Context, dir string, args []string) ([]byte, error)

// Binary is a Runner of the program at path: its standard output, whatever
// its exit code (kdupcap exits 3 or 4 on purpose), with the environment's
// COLUMNS left out so that output to a pipe has no width.
func Binary(path string) Runner {
	return func(ctx context.Context, dir string, args []string) ([]byte, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, abs, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TZ=UTC"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
		}
		return out, nil
	}
}

// Diff is one marked block whose content differs from the output.
type Diff struct {
	Line      int // the marker's
	Args      []string
	Want, Got []string // Want is the output, Got what the document holds
}

func (d Diff) String() string {
	n := 0
	for n < len(d.Want) && n < len(d.Got) && d.Want[n] == d.Got[n] {
		n++
	}
	at := func(l []string) string {
		if n < len(l) {
			return strconv.Quote(l[n])
		}
		return "(end)"
	}
	return fmt.Sprintf("line %d (kdupcap %s): block line %d is %s, the output's %s", d.Line, strings.Join(d.Args, " "), n+1, at(d.Got), at(d.Want))
}

// Check runs every marked block of doc (a Markdown file at path) and
// returns those that differ.
func Check(ctx context.Context, path string, doc []byte, run Runner) ([]Diff, error) {
	blocks, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var diffs []Diff
	for _, b := range blocks {
		want, err := output(ctx, path, b, run)
		if err != nil {
			return nil, err
		}
		if strings.Join(want, "\n") != strings.Join(b.Body, "\n") {
			diffs = append(diffs, Diff{Line: b.Line, Args: b.Marker.Args, Want: want, Got: b.Body})
		}
	}
	return diffs, nil
}

// Update returns doc with every marked block replaced by its output.
func Update(ctx context.Context, path string, doc []byte, run Runner) ([]byte, error) {
	blocks, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lines := strings.Split(string(doc), "\n")
	var out []string
	prev := 0
	for _, b := range blocks {
		want, err := output(ctx, path, b, run)
		if err != nil {
			return nil, err
		}
		out = append(out, lines[prev:b.start]...)
		out = append(out, want...)
		prev = b.end
	}
	out = append(out, lines[prev:]...)
	return []byte(strings.Join(out, "\n")), nil
}

// output is block b's expected content.
func output(ctx context.Context, path string, b Block, run Runner) ([]string, error) {
	dir := filepath.Join(filepath.Dir(path), b.Marker.Dir)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	raw, err := run(ctx, dir, b.Marker.Args)
	if err != nil {
		return nil, fmt.Errorf("%s line %d: %w", path, b.Line, err)
	}
	return Render(b.Marker, raw), nil
}
