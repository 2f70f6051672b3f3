package main

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
)

// parseSize reads a byte count such as 20GB (powers of 1000) or 512MiB
// (powers of 1024), with go-humanize.
func parseSize(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%q: want a size such as 500MB or 2GiB", s)
	}
	return int64(n), nil
}
