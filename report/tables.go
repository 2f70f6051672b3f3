package report

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twcache"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"
)

const (
	left  = tw.AlignLeft
	right = tw.AlignRight
)

// tables hands out tablewriter tables that write to one buffer: one table
// per column alignment, reset for each use. tablewriter (v1.1) gives every
// NewTable a 10240-entry stringer cache that Reset allocates again: made
// per finding, that was ~0.4 ms and ~0.5 MB a finding, a hundred times the
// cost of its JSON line, and a tenth of a whole analyze run over a 1 GB
// capture. Kept tables with a one-entry cache (kdupcap sets no stringer, so
// the cache is never used) cost only their rows.
//
// With a width (not 0), a table is fitted to it: its rows are held until
// Render, and the widest columns are narrowed until the table fits, their
// cells wrapped at spaces (words broken when they must), a cell of more
// than maxCellLines lines cut with an ellipsis.
type tables struct {
	b       *bytes.Buffer
	width   int
	byAlign map[string]*tablewriter.Table
	t       table
}

// table is the table get hands out: tablewriter's, or, with a width, rows
// held to be fitted at Render.
type table struct {
	tw     *tablewriter.Table
	width  int
	header []string
	rows   [][]string
	// rowLines gives the table of the same columns with a line between
	// rows, for rows whose cells wrap.
	rowLines func() *tablewriter.Table
}

// get returns an empty table writing to ts.b with the columns aligned as
// given and the header printed as written.
func (ts *tables) get(align ...tw.Align) *table {
	ts.t = table{tw: ts.table(align, false), width: ts.width,
		rowLines: func() *tablewriter.Table { return ts.table(align, true) }}
	return &ts.t
}

// table returns the kept table of these columns, reset; lined: with a
// line between rows.
func (ts *tables) table(align []tw.Align, lined bool) *tablewriter.Table {
	var key strings.Builder
	for _, a := range align {
		key.WriteString(string(a))
		key.WriteByte(0)
	}
	if lined {
		key.WriteString("lined")
	}
	if t, ok := ts.byAlign[key.String()]; ok {
		t.Reset()
		return t
	}
	if ts.byAlign == nil {
		ts.byAlign = make(map[string]*tablewriter.Table)
	}
	opts := []tablewriter.Option{
		tablewriter.WithStringerCacheCustom(twcache.NewLRU[reflect.Type, reflect.Value](1)),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: align}),
	}
	if lined {
		opts = append(opts, tablewriter.WithRendition(tw.Rendition{Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}}))
	}
	t := tablewriter.NewTable(ts.b, opts...)
	ts.byAlign[key.String()] = t
	return t
}

// Header sets the column names: strings, or one []string.
func (t *table) Header(cells ...any) {
	var h []string
	for _, c := range cells {
		switch c := c.(type) {
		case []string:
			h = append(h, c...)
		default:
			h = append(h, fmt.Sprint(c))
		}
	}
	if t.width == 0 {
		t.tw.Header(h)
		return
	}
	t.header = h
}

// Append adds one row.
func (t *table) Append(row []string) error {
	if t.width == 0 {
		return t.tw.Append(row)
	}
	t.rows = append(t.rows, slices.Clone(row))
	return nil
}

// Bulk adds rows.
func (t *table) Bulk(rows [][]string) error {
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return nil
}

// Render writes the table, fitted to its width; when a cell of the first
// column had to wrap, a line separates the rows, so that a row's lines are
// told from the next's.
func (t *table) Render() error {
	if t.width == 0 {
		return t.tw.Render()
	}
	caps := fitColumns(t.header, t.rows, t.width)
	rows := make([][]string, len(t.rows))
	tbl := t.tw
	for i, r := range t.rows {
		rows[i] = wrapRow(r, caps)
		if len(rows[i]) > 0 && strings.Contains(rows[i][0], "\n") {
			tbl = t.lined()
		}
	}
	if t.header != nil {
		tbl.Header(wrapRow(t.header, caps))
	}
	for _, r := range rows {
		if err := tbl.Append(r); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// lined returns t's table with a line between rows (kept in the owner's
// tables under its own key).
func (t *table) lined() *tablewriter.Table {
	if t.rowLines == nil {
		return t.tw
	}
	return t.rowLines()
}

// maxCellLines is the most lines a fitted cell wraps to; the rest is cut.
const maxCellLines = 6

// Bounds of fitColumns: the least width a column is narrowed to, and the
// longest word it keeps whole when the table can.
const (
	minColumn = 4
	maxWord   = 24
)

// fitColumns returns the width each column may take for the table to be at
// most width wide (tablewriter's borders and padding take 3 columns per
// column and 1), nil when it fits as it is. The widest columns are
// narrowed to one width, the largest that fits ("water-filling"), but no
// column below its longest word (up to maxWord) when the words all fit;
// else below minColumn (a table of very many columns may then stay wider,
// and its lines are cut: fitLines).
func fitColumns(header []string, rows [][]string, width int) []int {
	n := len(header)
	for _, r := range rows {
		n = max(n, len(r))
	}
	if n == 0 {
		return nil
	}
	natural, word := make([]int, n), make([]int, n)
	measure := func(r []string) {
		for i, c := range r {
			natural[i] = max(natural[i], twwidth.Width(c))
			for _, w := range strings.Fields(c) {
				word[i] = max(word[i], min(twwidth.Width(w), maxWord))
			}
		}
	}
	measure(header)
	for _, r := range rows {
		measure(r)
	}
	budget := width - 3*n - 1
	total, words := 0, 0
	floor := make([]int, n)
	for i, w := range natural {
		total += w
		floor[i] = max(min(word[i], w), min(minColumn, w))
		words += floor[i]
	}
	if total <= budget {
		return nil
	}
	if words > budget {
		// Not every word fits whole: the columns of the longest words
		// break theirs, the others keep them.
		least := make([]int, n)
		for i, w := range natural {
			least[i] = min(minColumn, w)
		}
		c := waterLevel(floor, least, budget)
		for i := range floor {
			floor[i] = max(least[i], min(floor[i], c))
		}
	}
	c := waterLevel(natural, floor, budget)
	caps := make([]int, n)
	for i, w := range natural {
		caps[i] = max(floor[i], min(w, c))
	}
	return caps
}

// waterLevel is the largest cap c (minColumn at least) with the sum of
// max(floor, min(want, c)) at most budget.
func waterLevel(want, floor []int, budget int) int {
	sum := func(c int) int {
		s := 0
		for i, w := range want {
			s += max(floor[i], min(w, c))
		}
		return s
	}
	lo, hi := minColumn, max(minColumn, slices.Max(want))
	for lo < hi {
		c := (lo + hi + 1) / 2
		if sum(c) <= budget {
			lo = c
		} else {
			hi = c - 1
		}
	}
	return lo
}

// wrapRow wraps each cell of r to its column's cap (none when caps is
// nil).
func wrapRow(r []string, caps []int) []string {
	if caps == nil {
		return r
	}
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = wrapCell(c, caps[i])
	}
	return out
}

// wrapCell wraps s to lines of at most width columns, at spaces, breaking
// a longer word, and cuts it with an ellipsis past maxCellLines lines.
func wrapCell(s string, width int) string {
	if twwidth.Width(s) <= width {
		return s
	}
	lines := wrapText(s, width, width)
	if len(lines) > maxCellLines {
		lines = lines[:maxCellLines]
		last := lines[maxCellLines-1]
		if twwidth.Width(last) >= width {
			last = cutWidth(last, width-1)
		}
		lines[maxCellLines-1] = last + "…"
	}
	return strings.Join(lines, "\n")
}

// wrapText breaks s into lines, the first at most first columns wide, the
// others at most rest: at runs of spaces (kept within a line, dropped at a
// break); a word wider than its line is broken.
func wrapText(s string, first, rest int) []string {
	var lines []string
	room := first
	cur, curW := "", 0
	for len(s) > 0 {
		sp := len(s) - len(strings.TrimLeft(s, " "))
		sep := s[:sp]
		s = s[sp:]
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		w := s[:end]
		s = s[end:]
		if w == "" {
			break
		}
		ww := twwidth.Width(w)
		if cur != "" && curW+len(sep)+ww <= room {
			cur, curW = cur+sep+w, curW+len(sep)+ww
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
			cur, curW, room = "", 0, rest
		}
		for ww > room {
			head := cutWidth(w, room)
			lines = append(lines, head)
			room = rest
			w = w[len(head):]
			ww = twwidth.Width(w)
		}
		cur, curW = w, ww
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// cutWidth is the longest prefix of s at most width columns wide (one
// rune at least).
func cutWidth(s string, width int) string {
	w := 0
	for i, r := range s {
		rw := twwidth.Width(string(r))
		if w+rw > width && i > 0 {
			return s[:i]
		}
		w += rw
	}
	return s
}

// fitLines writes text to dst with no line wider than width (0: as it
// is). A longer line of text is wrapped at spaces, its continuation
// indented under the value when it starts with a label ("  producer: ")
// or two more than it otherwise; the lines of a paragraph indented five or
// more (a producer's diagnosis) are joined and wrapped again as one; a
// table's line (fitted already: tables) that is still too wide is cut with
// an ellipsis.
func fitLines(dst *bytes.Buffer, text []byte, width int) {
	if width <= 0 {
		dst.Write(text)
		return
	}
	lines := strings.Split(string(text), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if ind := indentOf(line); ind >= 5 && !tableLine(line) && twwidth.Width(line) > width {
			for i+1 < len(lines) && lines[i+1] != "" && indentOf(lines[i+1]) == ind && !tableLine(lines[i+1]) {
				i++
				line += " " + strings.TrimLeft(lines[i], " ")
			}
		}
		fitLine(dst, line, width)
		if i < len(lines)-1 {
			dst.WriteByte('\n')
		}
	}
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// tableLine reports whether line is a table's.
func tableLine(line string) bool {
	return strings.ContainsAny(line[:min(len(line), 4)], "│┌├└")
}

func fitLine(dst *bytes.Buffer, line string, width int) {
	if twwidth.Width(line) <= width {
		dst.WriteString(line)
		return
	}
	if tableLine(line) {
		dst.WriteString(cutWidth(line, width-1))
		dst.WriteString("…")
		return
	}
	indent := indentOf(line)
	body := line[indent:]
	cont := indent + 2
	if indent >= 5 {
		cont = indent // a paragraph
	}
	if label, _, ok := strings.Cut(body, " "); ok && strings.HasSuffix(label, ":") {
		rest := body[len(label):]
		cont = indent + len(label) + len(rest) - len(strings.TrimLeft(rest, " "))
	}
	if indent > width/2 {
		indent = 0
	}
	if cont > width/2 {
		cont = min(indent+2, width/2)
	}
	for i, l := range wrapText(body, width-indent, width-cont) {
		pad := indent
		if i > 0 {
			dst.WriteByte('\n')
			pad = cont
		}
		dst.WriteString(strings.Repeat(" ", pad))
		dst.WriteString(l)
	}
}

// OutputWidth is the width the table writer is to fit w's lines to
// (Options.Width): the terminal's when w is one, else columns (the
// COLUMNS environment variable) when it is a positive number, else 0, no
// limit: a file or a pipe gets every line whole.
func OutputWidth(w io.Writer, columns string) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(columns)); err == nil && n > 0 {
		return n
	}
	return 0
}
