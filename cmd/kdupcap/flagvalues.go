package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flag values that check themselves as they are set, so that an out of
// range number or an unknown word is a one-line flag error naming the flag
// (flagError), and the choices a shell completes are the ones parsed.

// intFlag is an int flag that must lie in [min, max].
type intFlag struct {
	p        *int
	min, max int
}

// intVar defines an int flag of value def that takes min to max.
func intVar(fs *flag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	fs.Var(&intFlag{p, min, max}, name, usage)
}

func (f *intFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("want a whole number")
	}
	if int(n) < f.min || int(n) > f.max {
		return fmt.Errorf("want %s", rangeText(strconv.Itoa(f.min), strconv.Itoa(f.max), f.max == math.MaxInt))
	}
	*f.p = int(n)
	return nil
}

func (f *intFlag) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return strconv.Itoa(*f.p)
}

func (f *intFlag) Get() any { return *f.p }

// durationFlag is a duration flag that must be at least min (0 or 1ns:
// not negative, or positive).
type durationFlag struct {
	p   *time.Duration
	min time.Duration
}

// durationVar defines a duration flag of value def, at least min.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, def, min time.Duration, usage string) {
	*p = def
	fs.Var(&durationFlag{p, min}, name, usage)
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 500ms, 30s or 10m")
	}
	if d < f.min {
		if f.min > 0 {
			return errors.New("want a positive duration")
		}
		return fmt.Errorf("want %v or more", f.min)
	}
	*f.p = d
	return nil
}

func (f *durationFlag) String() string {
	if f == nil || f.p == nil {
		return "0s"
	}
	return f.p.String()
}

func (f *durationFlag) Get() any { return *f.p }

// positiveFloat is a float64 flag that must be positive and finite.
type positiveFloat struct{ p *float64 }

func positiveFloatVar(fs *flag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var(&positiveFloat{p}, name, usage)
}

func (f *positiveFloat) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return errors.New("want a positive number")
	}
	*f.p = x
	return nil
}

func (f *positiveFloat) String() string {
	if f == nil || f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

func (f *positiveFloat) Get() any { return *f.p }

// choiceFlag is a string flag that takes one of a few words; the shell
// completions offer them (choicer).
type choiceFlag struct {
	p       *string
	choices []string
}

// choiceVar defines a string flag of value def that takes one of choices.
func choiceVar(fs *flag.FlagSet, p *string, name, def string, choices []string, usage string) {
	*p = def
	fs.Var(&choiceFlag{p, choices}, name, usage)
}

func (f *choiceFlag) Set(s string) error {
	if !slices.Contains(f.choices, s) {
		return fmt.Errorf("want %s", orList(f.choices))
	}
	*f.p = s
	return nil
}

func (f *choiceFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return *f.p
}

func (f *choiceFlag) Get() any { return *f.p }

// Choices are the words the flag takes.
func (f *choiceFlag) Choices() []string { return f.choices }

// listFlag is a flag of a comma-separated list of fixed words, which its
// set func checks and keeps; the completions offer the words.
type listFlag struct {
	words []string
	set   func(string) error
	value string
}

// listFunc defines a flag of a comma-separated list of words, as fs.Func.
func listFunc(fs *flag.FlagSet, name string, words []string, usage string, set func(string) error) {
	fs.Var(&listFlag{words: words, set: set}, name, usage)
}

func (f *listFlag) Set(s string) error {
	if err := f.set(s); err != nil {
		return err
	}
	f.value = s
	return nil
}

func (f *listFlag) String() string {
	if f == nil {
		return ""
	}
	return f.value
}

func (f *listFlag) Choices() []string { return f.words }
func (f *listFlag) List() bool        { return true }

// choicer is a flag value that takes a fixed set of words (a comma list of
// them when List says so), which help, completion and the man page list.
type choicer interface {
	Choices() []string
}

// lister is a choicer that takes a comma-separated list of its words.
type lister interface {
	List() bool
}

// rangeText says "min to max", or "min or more" when max is unbounded.
func rangeText(min, max string, unbounded bool) string {
	if unbounded {
		return min + " or more"
	}
	return min + " to " + max
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
