package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The flag package's errors rewritten into one line that names the flag as
// a person types it and says where the help is:
//
//	unknown flag --bogus; see kdupcap analyze --help
//	--max-batches -5: want 1 or more; see kdupcap analyze --help
//
// The FlagSets print nothing (newFlagSet): these lines are all they say.

// newFlagSet is the FlagSet of command ("kdupcap analyze"), which prints
// nothing itself: its errors go through flagError, its help through
// writeHelp.
func newFlagSet(command string) *flag.FlagSet {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// seeHelp ends a usage error of fs's command with where its help is; nil
// and flag.ErrHelp pass unchanged.
func seeHelp(fs *flag.FlagSet, err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w; see %s --help", err, fs.Name())
}

// flagError rewrites an error of fs.Parse into one line naming the flag
// (without where the help is: seeHelp adds it). flag.ErrHelp and errors it
// does not know pass unchanged.
func flagError(fs *flag.FlagSet, err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return errors.New("unknown flag " + dashed(name) + didYouMean(name, names, dashed))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag %s needs a value", dashed(name))
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if value, name, _, ok := splitValueError(rest, " for -"); ok {
			return fmt.Errorf("%s=%s: want true or false", dashed(name), quoteArg(value))
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if value, name, why, ok := splitValueError(rest, " for flag -"); ok {
			return fmt.Errorf("%s %s: %s", dashed(name), quoteArg(value), valueReason(fs.Lookup(name), value, why))
		}
	}
	if s, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return fmt.Errorf("bad flag syntax %s", quoteArg(s))
	}
	return err
}

// splitValueError splits `"VALUE"<sep>NAME: WHY`, the tail of the flag
// package's invalid value errors.
func splitValueError(s, sep string) (value, name, why string, ok bool) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", "", false
	}
	value, _ = strconv.Unquote(q)
	rest, ok := strings.CutPrefix(s[len(q):], sep)
	if !ok {
		return "", "", "", false
	}
	name, why, ok = strings.Cut(rest, ": ")
	return value, name, why, ok
}

// valueReason is why value is refused: the flag's own reason without the
// value it may repeat, or for the standard types' "parse error" what they
// want.
func valueReason(f *flag.Flag, value, why string) string {
	why = strings.TrimPrefix(why, strconv.Quote(value)+": ")
	if why != "parse error" || f == nil {
		return why
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64, uint, uint64:
			return "want a whole number"
		case float64:
			return "want a number"
		case time.Duration:
			return "want a duration such as 500ms, 30s or 10m"
		}
	}
	return why
}

// dashed is a flag's name as the help spells it: -i, --format.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// quoteArg quotes s when it would not read as one word.
func quoteArg(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"'\\") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}

// didYouMean names the one of names (of flags, of commands) that name is
// a likely typo or the start of, as spell writes it: " (did you mean
// --format?)", or "". A name of two letters or more that starts just one
// of names means it; else the nearest within two edits, fewer than half
// its length.
func didYouMean(name string, names []string, spell func(string) string) string {
	best, bestDist, prefixed := "", 3, 0
	for _, n := range names {
		if len(name) >= 2 && strings.HasPrefix(n, name) {
			prefixed++
			best, bestDist = n, 0
			continue
		}
		if d := editDistance(name, n); d < bestDist && d < len(n)/2 {
			best, bestDist = n, d
		}
	}
	if best == "" || prefixed > 1 {
		return ""
	}
	return " (did you mean " + spell(best) + "?)"
}

// editDistance is the optimal string alignment distance of a and b: the
// Levenshtein distance, with two adjacent letters swapped ("hepl") one
// edit, the commonest typo.
func editDistance(a, b string) int {
	pprev := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
		}
		pprev, prev, cur = prev, cur, pprev
	}
	return prev[len(b)]
}
