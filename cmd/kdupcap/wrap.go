package main

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/report"
)

// Text wrapped to the terminal, for the help.

// Bounds of the help's width: narrower would break every line, and wider
// lines are hard to read even on a wide terminal.
const (
	defaultWidth = 80
	minWidth     = 40
	maxWidth     = 100
)

// helpWidth is the width to wrap the help written to w to: the
// terminal's when w is one, else $COLUMNS when set, else 80 (as the tables
// of report.OutputWidth, but never unbounded); within minWidth and
// maxWidth.
func helpWidth(w io.Writer) int {
	n := report.OutputWidth(w, os.Getenv("COLUMNS"))
	if n <= 0 {
		return defaultWidth
	}
	return min(max(n, minWidth), maxWidth)
}

// wrap breaks text into lines of at most width columns (a word longer than
// that stands alone), each starting with indent. Blank lines part
// paragraphs; within one, a line that starts with a space is kept as it
// is (an example) unless too wide, the others are joined and refilled.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	var words []string
	flush := func() {
		if len(words) > 0 {
			fill(&b, words, width, indent, indent)
			words = words[:0]
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			b.WriteString("\n")
		case line[0] == ' ':
			flush()
			lead := indent + line[:len(line)-len(strings.TrimLeft(line, " "))]
			if columns(indent+line) <= width {
				b.WriteString(indent + line + "\n")
			} else {
				fill(&b, strings.Fields(line), width, lead, lead+"    ")
			}
		default:
			words = append(words, strings.Fields(line)...)
		}
	}
	flush()
	return b.String()
}

// fill writes words as lines of at most width columns, the first starting
// with first, the others with indent.
func fill(b *strings.Builder, words []string, width int, first, indent string) {
	col := 0
	for i, w := range words {
		switch {
		case i == 0:
			b.WriteString(first)
			col = columns(first)
		case col+1+columns(w) > width:
			b.WriteString("\n" + indent)
			col = columns(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += columns(w)
	}
	b.WriteString("\n")
}

// columns is how many columns s takes: one per rune.
func columns(s string) int { return utf8.RuneCountInString(s) }
