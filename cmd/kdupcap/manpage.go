package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"unicode"
)

// kdupcap man: the man page, kdupcap(1) in roff, written from the commands'
// FlagSets and the exit codes of run.go, as the help is; `make man` puts it
// in man/kdupcap.1.

// runMan is `kdupcap man` (hidden): the man page on standard output.
func runMan(cmds []command, args []string, stdout, stderr io.Writer) int {
	c, _ := lookup(cmds, "man")
	operands, code := parseCommand(c, c.flags(), args, stdout, stderr)
	switch {
	case code >= 0:
		return code
	case len(operands) > 0:
		return usageFail(stderr, c, fmt.Errorf("unexpected argument %s", quoteArg(operands[0])))
	}
	bi, _ := debug.ReadBuildInfo()
	return writeOut(stdout, manPage(cmds, readVersion(version, bi)))
}

// manPage is the roff of kdupcap(1) for version v: dated by v's commit, so
// that the same source gives the same page.
func manPage(cmds []command, v versionInfo) string {
	date, _, _ := strings.Cut(v.Time, "T")
	var b strings.Builder
	b.WriteString(".\\\" kdupcap(1), written by \"kdupcap man\" from the flags the commands parse.\n")
	fmt.Fprintf(&b, ".TH KDUPCAP 1 %q %q \"User Commands\"\n", date, "kdupcap "+v.Version)
	b.WriteString(".nh\n") // no hyphenation: flag names and verdicts stay whole
	b.WriteString(".SH NAME\nkdupcap \\- find Kafka producer retries that wrote data twice, from packet captures\n")
	b.WriteString(".SH SYNOPSIS\n")
	for i, c := range visible(cmds) {
		if i > 0 {
			b.WriteString(".br\n")
		}
		fmt.Fprintf(&b, ".B kdupcap %s\n%s\n", c.name, roffSynopsis(c.synopsis))
	}
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(roffParagraphs("kdupcap finds the Kafka producer requests that sent a record batch more than once, " +
		"in packet captures (analyze) or on a live interface (live), and says whether the broker's log holds the batch twice, " +
		"why the producer sent it again, and which setting of the producer would have avoided it.\n\n" +
		"Flags take one dash or two (-format, --format) and their value as the next word or after an equals sign (--format=json); " +
		"a boolean flag is turned off with =false (--record-match=false). Every command takes -h or --help, which prints its help on standard output."))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range visible(cmds) {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", c.name, roffText(c.summary))
	}
	for _, c := range visible(cmds) {
		fmt.Fprintf(&b, ".SH \"KDUPCAP %s\"\n", strings.ToUpper(c.name))
		fmt.Fprintf(&b, ".B kdupcap %s\n%s\n", c.name, roffSynopsis(c.synopsis))
		if c.about != "" {
			b.WriteString(roffParagraphs(c.about))
		}
		for _, d := range docFlags(c.flags()) {
			b.WriteString(".TP\n")
			if d.arg == "" {
				fmt.Fprintf(&b, ".B %s\n", roffName(d.name))
			} else {
				fmt.Fprintf(&b, ".BI %s \" %s\"\n", roffName(d.name), roffText(d.arg))
			}
			usage := d.usage
			if d.def != "" {
				usage += " (default " + d.def + ")"
			}
			b.WriteString(roffText(usage) + "\n")
		}
	}
	b.WriteString(".SH \"EXIT STATUS\"\n")
	for _, e := range exitStatuses() {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.code, roffText(e.meaning))
	}
	b.WriteString(".SH ENVIRONMENT\n" +
		".TP\n.B COLUMNS\nthe width of the help and the tables when standard output is not a terminal (the help: else 80 columns).\n" +
		".TP\n.B GOMEMLIMIT\\fR, \\fBGOGC\nthe Go runtime's memory limit and collector target; unset, kdupcap sets 208MiB and 50.\n")
	b.WriteString(".SH \"SEE ALSO\"\n.BR tcpdump (8),\n.BR tshark (1),\n.BR pcap-filter (7)\n")
	return b.String()
}

// visible are the commands the help lists.
func visible(cmds []command) []command {
	var out []command
	for _, c := range cmds {
		if !c.hidden {
			out = append(out, c)
		}
	}
	return out
}

// roffParagraphs is text's paragraphs (wrap's: blank lines part them, a
// line starting with a space is kept as it is) in roff.
func roffParagraphs(text string) string {
	var b strings.Builder
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		b.WriteString(".PP\n")
		var words []string
		example := false
		for _, line := range strings.Split(para, "\n") {
			if strings.HasPrefix(line, " ") {
				if !example {
					b.WriteString(".RS 4\n.nf\n")
					example = true
				}
				b.WriteString(roffText(strings.TrimSpace(line)) + "\n")
				continue
			}
			words = append(words, line)
		}
		if example {
			b.WriteString(".fi\n.RE\n")
		}
		if len(words) > 0 {
			b.WriteString(roffText(strings.Join(words, " ")) + "\n")
		}
	}
	return b.String()
}

// roffSynopsis is a command's synopsis in roff: its placeholders (FILE,
// INTERFACE) in italics.
func roffSynopsis(s string) string {
	fields := strings.Fields(s)
	for i, f := range fields {
		word := strings.Trim(f, "[]|.")
		if word != "" && strings.ToUpper(word) == word && strings.IndexFunc(word, unicode.IsLetter) >= 0 {
			fields[i] = strings.Replace(roffText(f), word, `\fI`+word+`\fR`, 1)
		} else {
			fields[i] = roffText(f)
		}
	}
	return strings.Join(fields, " ")
}

// roffName is a flag's name in roff: every dash a minus sign.
func roffName(name string) string { return strings.ReplaceAll(name, "-", `\-`) }

// roffText escapes text for roff: backslashes, the dashes that start an
// option (minus signs, not hyphens), a control character at the start.
func roffText(s string) string {
	var b strings.Builder
	prev := ' '
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-' && strings.ContainsRune(" ([|=,-\"'", prev):
			b.WriteString(`\-`)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	out := b.String()
	if strings.HasPrefix(out, ".") || strings.HasPrefix(out, "'") {
		out = `\&` + out
	}
	return out
}
