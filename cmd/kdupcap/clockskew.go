package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// clockSkewFlag collects the repeated --clock-skew FILE=DURATION flags.
type clockSkewFlag []clockSkewArg

type clockSkewArg struct {
	file string
	skew time.Duration
}

func (f *clockSkewFlag) String() string {
	var parts []string
	for _, a := range *f {
		parts = append(parts, a.file+"="+a.skew.String())
	}
	return strings.Join(parts, ",")
}

// Set takes FILE=DURATION, splitting at the last '=' (a duration has none,
// a file name may).
func (f *clockSkewFlag) Set(s string) error {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 {
		return fmt.Errorf("%q: want FILE=DURATION, e.g. broker2.pcap=-1.5s", s)
	}
	d, err := time.ParseDuration(s[i+1:])
	if err != nil {
		return fmt.Errorf("%q: want FILE=DURATION, e.g. broker2.pcap=-1.5s: %w", s, err)
	}
	*f = append(*f, clockSkewArg{file: s[:i], skew: d})
	return nil
}

// resolve turns the flags into one skew per file of files. FILE is a file
// as given on the command line, or, when no file is named so, its 1-based
// position among them. Every file named by FILE gets the skew (the same file
// may be given twice); a FILE that matches nothing, or one given two skews,
// is an error.
func (f clockSkewFlag) resolve(files []string) ([]time.Duration, error) {
	if len(f) == 0 {
		return nil, nil
	}
	skew := make([]time.Duration, len(files))
	set := make([]bool, len(files))
	for _, a := range f {
		var idx []int
		for i, name := range files {
			if name == a.file {
				idx = append(idx, i)
			}
		}
		if n, err := strconv.Atoi(a.file); len(idx) == 0 && err == nil && n >= 1 && n <= len(files) {
			idx = []int{n - 1}
		}
		if len(idx) == 0 {
			return nil, fmt.Errorf("--clock-skew %s=%s: %q is not one of the capture files %s", a.file, a.skew, a.file, strings.Join(files, " "))
		}
		for _, i := range idx {
			if set[i] && skew[i] != a.skew {
				return nil, fmt.Errorf("--clock-skew: %s given two skews, %s and %s", files[i], skew[i], a.skew)
			}
			skew[i], set[i] = a.skew, true
		}
	}
	return skew, nil
}
