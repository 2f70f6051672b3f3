package report

import (
	"encoding/hex"
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
var verdicts = [...]detect.Verdict{detect.Duplicated, detect.Deduplicated, detect.Single, detect.Unconfirmed, detect.Rejected}

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

// topicName is the topic's name, or its ID in UUID form when no name is
// known.
func topicName(f *detect.Finding) string {
	if f.Topic == "" && f.TopicID != ([16]byte{}) {
		return uuidString(f.TopicID)
	}
	return f.Topic
}

// uuidString formats a topic ID as 8-4-4-4-12 hex digits.
func uuidString(id [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}

func itoa[T ~int8 | ~int16 | ~int32 | ~int64 | ~int](n T) string {
	return strconv.FormatInt(int64(n), 10)
}

func millisText(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
