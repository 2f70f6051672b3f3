package gencap

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a capture size as the bench commands take it: "100MB",
// "64KB", "1GB" (powers of 1024), "123B" or "123"; at most 2^50 bytes.
func ParseSize(s string) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		name string
		mult int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(u, suf.name) {
			u, mult = strings.TrimSuffix(u, suf.name), suf.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(u), 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("size %q is not a positive size like 100MB", s)
	}
	return n * mult, nil
}
