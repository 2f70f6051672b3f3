package report

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

// StatusLine is the one line a live run prints to stderr every so often,
// without a newline:
//
//	1m30s: packets 12345 (2.1 MB), drops 0, connections 3, produce requests 456, findings 2 (duplicated 1, deduplicated 1)
//
// Drops always show, even at 0: a drop is never silent. Gaps, malformed
// frames and evictions show once there are any. findings counts by verdict;
// verdicts at 0 are left out.
func StatusLine(s Counters, findings map[detect.Verdict]int64, elapsed time.Duration) string {
	var b strings.Builder
	b.WriteString(elapsed.Round(time.Second).String())
	b.WriteString(": packets ")
	b.WriteString(itoa(s.Packets))
	b.WriteString(" (")
	b.WriteString(byteSize(s.Bytes))
	b.WriteString("), drops ")
	b.WriteString(itoa(s.Drops))
	if s.Gaps > 0 {
		b.WriteString(", gaps ")
		b.WriteString(itoa(s.Gaps))
	}
	b.WriteString(", connections ")
	b.WriteString(itoa(s.Connections))
	b.WriteString(", produce requests ")
	b.WriteString(itoa(s.ProduceRequests))
	if s.Malformed > 0 {
		b.WriteString(", malformed ")
		b.WriteString(itoa(s.Malformed))
	}
	if s.EvictedConnections > 0 || s.EvictedBatches > 0 || s.EvictedPending > 0 {
		b.WriteString(", evicted connections ")
		b.WriteString(itoa(s.EvictedConnections))
		b.WriteString(" batches ")
		b.WriteString(itoa(s.EvictedBatches))
		b.WriteString(" pending ")
		b.WriteString(itoa(s.EvictedPending))
	}

	// Known verdicts in their print order, then any other in name order.
	order := make([]detect.Verdict, 0, len(findings))
	for _, v := range verdicts {
		if findings[v] != 0 {
			order = append(order, v)
		}
	}
	var rest []detect.Verdict
	var total int64
	for v, n := range findings {
		total += n
		if n != 0 && !slices.Contains(verdicts[:], v) {
			rest = append(rest, v)
		}
	}
	slices.Sort(rest)
	order = append(order, rest...)
	b.WriteString(", findings ")
	b.WriteString(itoa(total))
	if len(order) > 0 {
		b.WriteString(" (")
		for i, v := range order {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(Printable(string(v)))
			b.WriteByte(' ')
			b.WriteString(itoa(findings[v]))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// byteSize is n in bytes, kB, MB, GB or TB (powers of 1000) with one
// decimal.
func byteSize(n int64) string {
	if n < 1000 && n > -1000 {
		return itoa(n) + " B"
	}
	v, unit := float64(n)/1000, "kB"
	for _, u := range []string{"MB", "GB", "TB"} {
		if v < 999.95 && v > -999.95 {
			break
		}
		v, unit = v/1000, u
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}
