package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The help of kdupcap and of each command, written from the commands'
// FlagSets: the flags listed are the flags parsed.

// command is one of kdupcap's commands as the help, the completions and the
// man page describe it.
type command struct {
	name     string // as typed: "analyze"
	synopsis string // what follows "kdupcap NAME" in its usage line
	summary  string // one line, for the list of commands
	about    string // the help's description (wrap's paragraphs)
	// flags makes a FlagSet with the command's flags, as it parses them.
	flags func() *flag.FlagSet
	// operands are the words its arguments take (completion bash ...);
	// files says they are files instead.
	operands []string
	files    bool
	hidden   bool // left out of the help and the completions (man)
}

// lookup finds the command name among cmds.
func lookup(cmds []command, name string) (command, bool) {
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return cmds[i], true
}

// flagDoc is what the help, the man page and the completions say of a flag.
type flagDoc struct {
	name    string   // as typed: "-i", "--format"
	arg     string   // its value's placeholder ("FILE", "table|json"); "" for a boolean
	usage   string   // what it does, backquotes removed
	def     string   // its default as shown; "" when nothing worth showing
	choices []string // the words it takes, if fixed
	list    bool     // it takes a comma-separated list of choices
}

// docFlags describes fs's flags in the order of their names.
func docFlags(fs *flag.FlagSet) []flagDoc {
	var docs []flagDoc
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		d := flagDoc{name: dashed(f.Name), usage: usage, def: f.DefValue}
		if c, ok := f.Value.(choicer); ok {
			d.choices = c.Choices()
			if l, ok := f.Value.(lister); ok && l.List() {
				d.list = true
			}
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			arg = ""
		} else if !strings.Contains(f.Usage, "`") {
			arg = placeholder(f, d.choices, d.list)
		}
		d.arg = arg
		switch d.def {
		case "", "0", "0s", "false", "[]":
			d.def = ""
		}
		if g, ok := f.Value.(flag.Getter); ok && d.def != "" && d.choices == nil {
			if _, ok := g.Get().(string); ok {
				d.def = fmt.Sprintf("%q", d.def)
			}
		}
		docs = append(docs, d)
	})
	return docs
}

// placeholder names what a flag's value is when its usage does not.
func placeholder(f *flag.Flag, choices []string, list bool) string {
	switch {
	case list:
		return "LIST"
	case choices != nil:
		return strings.Join(choices, "|")
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			return "DURATION"
		case int, int64, uint, uint64, float64:
			return "N"
		}
	}
	return "STRING"
}

// writeHelp writes c's help to w, wrapped to w's width.
func writeHelp(w io.Writer, c command) int {
	width := helpWidth(w) - 1
	var b strings.Builder
	b.WriteString(wrap("Usage: kdupcap "+c.name+" "+c.synopsis, width, ""))
	if c.about != "" {
		b.WriteString("\n" + wrap(c.about, width, ""))
	}
	b.WriteString("\nFlags:\n")
	var docs []flagDoc
	if c.flags != nil {
		docs = docFlags(c.flags())
	}
	// The help's own flag, which no FlagSet defines.
	docs = append(docs, flagDoc{name: "-h, --help", usage: "show this help"})
	for _, d := range docs {
		b.WriteString(wrap(strings.TrimSpace(d.name+" "+d.arg), width, "  "))
		usage := d.usage
		if d.def != "" {
			usage += " (default " + d.def + ")"
		}
		b.WriteString(wrap(usage, width, "      "))
	}
	return writeOut(w, b.String())
}

// topUsage is kdupcap's own help, to w wrapped to its width: the commands.
func topUsage(w io.Writer, cmds []command) string {
	width := helpWidth(w) - 1
	var b strings.Builder
	b.WriteString(wrap("kdupcap finds Kafka producer retries that wrote data twice, from packet captures.", width, ""))
	b.WriteString("\nUsage:\n")
	lefts, col := map[string]string{}, 0
	for _, c := range cmds {
		if !c.hidden {
			lefts[c.name] = "  " + strings.TrimSpace("kdupcap "+c.name+" "+c.synopsis)
			col = max(col, columns(lefts[c.name]))
		}
	}
	for _, c := range cmds {
		if c.hidden {
			continue
		}
		left := lefts[c.name]
		if col+2+20 > width {
			// Too narrow for two columns: the summary below.
			b.WriteString(wrap(left, width, "") + wrap(c.summary, width, "      "))
			continue
		}
		var line strings.Builder
		fill(&line, strings.Fields(c.summary), width, left+strings.Repeat(" ", col+2-columns(left)), strings.Repeat(" ", col+2))
		b.WriteString(line.String())
	}
	b.WriteString("\n" + wrap("Run 'kdupcap COMMAND --help' for its flags, 'kdupcap --version' for the version.", width, ""))
	return b.String()
}

// parseFailed is what a command's parser returns for fs.Parse's error
// err: on -h or --help, flag.ErrHelp, the help written to stdout; else the
// one-line flag error.
func parseFailed(fs *flag.FlagSet, err error, stdout io.Writer) error {
	if !errors.Is(err, flag.ErrHelp) {
		return flagError(fs, err)
	}
	if c, ok := lookup(commands(), strings.TrimPrefix(fs.Name(), "kdupcap ")); ok {
		writeHelp(stdout, c)
	}
	return flag.ErrHelp
}

// writeOut writes s to w: exitOK, or exitFailure when w fails.
func writeOut(w io.Writer, s string) int {
	if _, err := io.WriteString(w, s); err != nil {
		return exitFailure
	}
	return exitOK
}
