package main

import (
	"fmt"
	"strings"
)

// zshCompletion is the zsh script of `kdupcap completion zsh`, for fpath
// (#compdef) or to source, with _arguments specs and descriptions.
func zshCompletion(cs []completed) string {
	var b strings.Builder
	b.WriteString(`#compdef kdupcap
# zsh completion for kdupcap, written by "kdupcap completion zsh".
# Load it with: source <(kdupcap completion zsh), or write it to
# ${fpath[1]}/_kdupcap.

_kdupcap() {
	local curcontext=$curcontext state line ret=1
	typeset -A opt_args
	_arguments -C \
		'(- :)'{-h,--help}'[show the help]' \
		'(- :)--version[print the version]' \
		'1:command:->command' \
		'*::argument:->argument' && ret=0
	case $state in
	command)
		local -a commands=(
`)
	for _, c := range cs {
		fmt.Fprintf(&b, "\t\t\t%s\n", zshQuote(c.name+":"+c.summary))
	}
	b.WriteString("\t\t)\n\t\t_describe -t commands 'kdupcap command' commands && ret=0\n\t\t;;\n")
	b.WriteString("\targument)\n\t\tcurcontext=${curcontext%:*:*}:kdupcap-$words[1]:\n\t\tcase $words[1] in\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\t_arguments -S \\\n", c.name)
		b.WriteString("\t\t\t\t'(- *)'{-h,--help}'[show the help]' \\\n")
		for _, d := range c.flags {
			fmt.Fprintf(&b, "\t\t\t\t%s \\\n", zshQuote(zshSpec(d)))
		}
		switch {
		case c.files:
			b.WriteString("\t\t\t\t'*:file:_files'")
		case c.operands != nil:
			fmt.Fprintf(&b, "\t\t\t\t%s", zshQuote("1:"+c.name+":("+strings.Join(c.operands, " ")+")"))
		default:
			b.WriteString("\t\t\t\t")
		}
		b.WriteString(" && ret=0\n\t\t\t;;\n")
	}
	b.WriteString(`		esac
		;;
	esac
	return ret
}

if [[ $funcstack[1] == _kdupcap ]]; then
	_kdupcap "$@"
else
	compdef _kdupcap kdupcap
fi
`)
	return b.String()
}

// zshSpec is a flag's _arguments spec: --format=[output format]:format:(table json).
func zshSpec(d flagDoc) string {
	desc := strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, ":", `\:`).Replace(brief(d.usage, 60))
	spec := d.name
	if d.repeatable() {
		spec = "*" + spec
	}
	if d.arg == "" {
		return spec + "[" + desc + "]"
	}
	if len(d.name) > 2 {
		spec += "=" // --flag=VALUE or --flag VALUE
	}
	// The value's message: its placeholder when a plain word (file, n,
	// duration), else the flag's name.
	msg := strings.ToLower(d.arg)
	if strings.IndexFunc(msg, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
		msg = strings.TrimLeft(d.name, "-")
	}
	var action string
	switch d.valueKind() {
	case "words":
		action = "(" + strings.Join(d.choices, " ") + ")"
	case "list":
		action = "_values -s , " + msg + " " + strings.Join(d.choices, " ")
	case "file":
		action = "_files"
	case "dir":
		action = "_files -/"
	case "interface":
		action = "_net_interfaces"
	case "user":
		action = "_users"
	default:
		action = " "
	}
	return spec + "[" + desc + "]:" + msg + ":" + action
}

// zshQuote quotes s for zsh in single quotes.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
