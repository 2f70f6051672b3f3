package report

import (
	"strconv"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

// Writer writes findings, then one summary, in one format.
type Writer interface {
	// Finding writes one finding; findings come in the order to print.
	Finding(f detect.Finding) error
	// Summary writes the run's counts, last.
	Summary(s Summary) error
}

// Verdicts in the order they are printed.
var verdicts = detect.Verdicts()

// timeLayout is RFC 3339 with exactly nine fraction digits.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func formatCRC(crc uint32) string {
	var b [10]byte
	b[0], b[1] = '0', 'x'
	const digits = "0123456789abcdef"
	for i := range 8 {
		b[9-i] = digits[crc>>(4*i)&0xf]
	}
	return string(b[:])
}

// TopicName is the topic of f as every output names it: its name, or its
// ID in UUID form when no name is known.
func TopicName(f *detect.Finding) string {
	if f.Topic == "" && f.TopicID != ([16]byte{}) {
		return detect.TopicIDString(f.TopicID)
	}
	return f.Topic
}

func itoa[T ~int8 | ~int16 | ~int32 | ~int64 | ~int](n T) string {
	return strconv.FormatInt(int64(n), 10)
}

func millisText(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
