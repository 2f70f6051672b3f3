package main

import (
	"fmt"
	"strings"
)

// bashCompletion is the bash script of `kdupcap completion bash`: one
// function, _kdupcap, bound with complete -F.
func bashCompletion(cs []completed) string {
	var b strings.Builder
	b.WriteString(`# bash completion for kdupcap, written by "kdupcap completion bash".
# Load it with: source <(kdupcap completion bash)

_kdupcap_words() { COMPREPLY=($(compgen -W "$1" -- "$cur")); }
_kdupcap_list() {
	local last=${cur##*,}
	COMPREPLY=($(compgen -P "${cur%"$last"}" -W "$1" -- "$last"))
	compopt -o nospace 2>/dev/null
}
_kdupcap_files() {
	compopt -o filenames 2>/dev/null
	local IFS=$'\n'
	COMPREPLY=($(compgen ${1:--f} -- "$cur"))
}
_kdupcap_interfaces() { _kdupcap_words "any $(ls /sys/class/net 2>/dev/null)"; }

_kdupcap() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev= flag=
	COMPREPLY=()
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}
	# The flag whose value this word is: the word before, or the one before
	# "=" (COMP_WORDBREAKS splits --format=json into --format, = and json).
	if [[ $cur == = ]]; then
		flag=$prev cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 2)); then
		flag=${COMP_WORDS[COMP_CWORD-2]}
	else
		flag=$prev
	fi
	# Go's flags take one dash or two: -format is --format.
	[[ $flag == -[!-]?* ]] && flag=-$flag
	if ((COMP_CWORD == 1)); then
`)
	var top []string
	for _, c := range cs {
		top = append(top, c.name)
	}
	fmt.Fprintf(&b, "\t\t_kdupcap_words %q\n\t\treturn\n\tfi\n", strings.Join(append(top, "--help", "--version"), " "))
	b.WriteString("\tcase ${COMP_WORDS[1]} in\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "\t%s)\n", c.name)
		bashFlagValues(&b, c.flags)
		names := []string{"--help"}
		for _, d := range c.flags {
			names = append(names, d.name)
		}
		fmt.Fprintf(&b, "\t\tif [[ $cur == -* ]]; then\n\t\t\t_kdupcap_words %q\n", strings.Join(names, " "))
		switch {
		case c.files:
			b.WriteString("\t\telse\n\t\t\t_kdupcap_files\n")
		case c.operands != nil:
			fmt.Fprintf(&b, "\t\telif ((COMP_CWORD == 2)); then\n\t\t\t_kdupcap_words %q\n", strings.Join(c.operands, " "))
		}
		b.WriteString("\t\tfi\n\t\t;;\n")
	}
	b.WriteString("\tesac\n}\n\ncomplete -F _kdupcap kdupcap\n")
	return b.String()
}

// bashFlagValues writes the case that completes the value of each flag
// that takes one, and returns there: nothing when the value is free.
func bashFlagValues(b *strings.Builder, flags []flagDoc) {
	var free []string
	var cases strings.Builder
	for _, d := range flags {
		if d.arg == "" {
			continue
		}
		var action string
		switch d.valueKind() {
		case "words":
			action = fmt.Sprintf("_kdupcap_words %q", strings.Join(d.choices, " "))
		case "list":
			action = fmt.Sprintf("_kdupcap_list %q", strings.Join(d.choices, " "))
		case "file":
			action = "_kdupcap_files"
		case "dir":
			action = "_kdupcap_files -d"
		case "interface":
			action = "_kdupcap_interfaces"
		case "user":
			action = "_kdupcap_words \"$(compgen -u)\""
		default:
			free = append(free, d.name)
			continue
		}
		fmt.Fprintf(&cases, "\t\t%s) %s; return ;;\n", d.name, action)
	}
	if cases.Len() == 0 && len(free) == 0 {
		return
	}
	b.WriteString("\t\tcase $flag in\n")
	b.WriteString(cases.String())
	if len(free) > 0 {
		fmt.Fprintf(b, "\t\t%s) return ;;\n", strings.Join(free, "|"))
	}
	b.WriteString("\t\tesac\n")
}
