package main

import (
	"fmt"
	"strings"
)

// fishCompletion is the fish script of `kdupcap completion fish`: one
// complete line per command and flag, with descriptions.
func fishCompletion(cs []completed) string {
	var b strings.Builder
	b.WriteString(`# fish completion for kdupcap, written by "kdupcap completion fish".
# Load it with: kdupcap completion fish | source

# __kdupcap_command: the command line is past the command, one of argv.
function __kdupcap_command
    set -l words (commandline -opc)
    test (count $words) -ge 2; and contains -- $words[2] $argv
end

# __kdupcap_operand: the word completed is the command's first operand.
function __kdupcap_operand
    test (count (commandline -opc)) -eq 2
end

complete -c kdupcap -f
complete -c kdupcap -n '__fish_is_first_arg' -s h -l help -d 'show the help'
complete -c kdupcap -n '__fish_is_first_arg' -l version -d 'print the version'
`)
	for _, c := range cs {
		fmt.Fprintf(&b, "complete -c kdupcap -n '__fish_is_first_arg' -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	for _, c := range cs {
		cond := fishQuote("__kdupcap_command " + c.name)
		fmt.Fprintf(&b, "\ncomplete -c kdupcap -n %s -s h -l help -d 'show the help'\n", cond)
		for _, d := range c.flags {
			fmt.Fprintf(&b, "complete -c kdupcap -n %s %s\n", cond, fishFlag(d))
		}
		switch {
		case c.files:
			fmt.Fprintf(&b, "complete -c kdupcap -n %s -F\n", cond)
		case c.operands != nil:
			fmt.Fprintf(&b, "complete -c kdupcap -n %s -a %s\n",
				fishQuote("__kdupcap_command "+c.name+"; and __kdupcap_operand"), fishQuote(strings.Join(c.operands, " ")))
		}
	}
	return b.String()
}

// fishFlag is the tail of a flag's complete line: its name, its value's
// completion and its description.
func fishFlag(d flagDoc) string {
	name := "-l " + strings.TrimLeft(d.name, "-")
	if len(d.name) == 2 {
		name = "-s " + d.name[1:]
	}
	desc := "-d " + fishQuote(brief(d.usage, 60))
	if d.arg == "" {
		return name + " " + desc
	}
	var values string
	switch d.valueKind() {
	case "words":
		values = "-x -a " + fishQuote(strings.Join(d.choices, " "))
	case "list":
		values = "-x -a " + fishQuote(`(__fish_complete_list , "string split ' ' '`+strings.Join(d.choices, " ")+`'")`)
	case "file":
		values = "-r -F"
	case "dir":
		values = "-x -a '(__fish_complete_directories)'"
	case "interface":
		values = "-x -a '(__fish_print_interfaces; echo any)'"
	case "user":
		values = "-x -a '(__fish_complete_users)'"
	default:
		values = "-x"
	}
	return name + " " + values + " " + desc
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
