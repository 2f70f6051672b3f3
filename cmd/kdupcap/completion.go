package main

import (
	"fmt"
	"io"
	"strings"
)

// kdupcap completion bash|zsh|fish: shell completion scripts written from
// the commands' FlagSets, the ones that parse, so that a flag added is a
// flag completed. Each script completes the commands, their flags, the
// values of flags that take fixed words (--format, --scope), file names
// where a flag or operand is a file, directories, interfaces and users.

// completionAbout is the help's description of the completion command.
const completionAbout = `Prints a script that makes the shell complete kdupcap's commands, flags, fixed flag values and file names. To load it in the running shell:

  bash:  source <(kdupcap completion bash)
  zsh:   source <(kdupcap completion zsh)
  fish:  kdupcap completion fish | source

To load it in every new shell, write it where the shell looks (the deb and rpm packages install all three):

  kdupcap completion bash > /etc/bash_completion.d/kdupcap
  kdupcap completion zsh > "${fpath[1]}/_kdupcap"
  kdupcap completion fish > ~/.config/fish/completions/kdupcap.fish`

// shells are the shells completion writes a script for.
func shells() []string { return []string{"bash", "zsh", "fish"} }

// runCompletion is `kdupcap completion SHELL`.
func runCompletion(cmds []command, args []string, stdout, stderr io.Writer) int {
	c, _ := lookup(cmds, "completion")
	operands, code := parseCommand(c, c.flags(), args, stdout, stderr)
	switch {
	case code >= 0:
		return code
	case len(operands) != 1:
		return usageFail(stderr, c, fmt.Errorf("want one shell: %s", orList(shells())))
	}
	var script string
	switch operands[0] {
	case "bash":
		script = bashCompletion(completions(cmds))
	case "zsh":
		script = zshCompletion(completions(cmds))
	case "fish":
		script = fishCompletion(completions(cmds))
	default:
		return usageFail(stderr, c, fmt.Errorf("unknown shell %s: want %s", quoteArg(operands[0]), orList(shells())))
	}
	return writeOut(stdout, script)
}

// completed is a command as the scripts complete it.
type completed struct {
	command
	flags []flagDoc
}

// completions are the visible commands with their flags.
func completions(cmds []command) []completed {
	var cs []completed
	for _, c := range cmds {
		if !c.hidden {
			cs = append(cs, completed{command: c, flags: docFlags(c.flags())})
		}
	}
	return cs
}

// valueKind is what the value of a flag is, for the shells' own
// completers, from its placeholder; "" when nothing can be offered.
func (d flagDoc) valueKind() string {
	switch {
	case d.choices != nil && d.list:
		return "list"
	case d.choices != nil:
		return "words"
	}
	switch d.arg {
	case "FILE":
		return "file"
	case "DIR":
		return "dir"
	case "INTERFACE":
		return "interface"
	case "USER":
		return "user"
	}
	return ""
}

// repeatable says the flag may be given more than once, as its usage says.
func (d flagDoc) repeatable() bool { return strings.Contains(d.usage, "repeat") }

// brief is the first clause of a flag's or command's usage, at most n
// columns, for the shells that show a description.
func brief(usage string, n int) string {
	s, _, _ := strings.Cut(usage, "; ")
	if i := strings.LastIndex(s, " ("); i > 0 && strings.Count(s, "(") > strings.Count(s, ")") {
		s = s[:i] // a clause cut inside parentheses: what comes before
	}
	if columns(s) <= n {
		return s
	}
	r := []rune(s)[:n-3]
	if i := strings.LastIndexByte(string(r), ' '); i > 0 {
		return string(r)[:i] + "..."
	}
	return string(r) + "..."
}
