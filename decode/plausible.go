package decode

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// kmsg refuses an array count only when the bytes left cannot hold one
// byte per element, and allocates every element first: a ProduceRequest
// announcing as many partitions as it has bytes left costs some 40 bytes
// of memory per frame byte before kmsg finds that they are not there, a
// ProduceResponse some 100. So a produce request or response is walked
// once before kmsg reads it, without allocating: every array count is
// checked against the smallest element the wire can hold in the bytes
// left, and the elements are skipped, so that what kmsg then allocates is
// at most a few times the frame's bytes. The walk costs a few nanoseconds
// per partition.

// Smallest elements on the wire: a topic of a produce request and of a
// response by version range (before v9, v9 to v12 flexible, v13 by topic
// ID), holding no partition; a partition of a request (partition and
// null records, tags when flexible); a record error of a response.
var (
	minRequestTopic  = [3]int64{15, 10, 24}
	minResponseTopic = [3]int64{21, 17, 32}
	minRecordError   = [2]int64{6, 3}
)

// minBatchBytes is the smallest batch on the wire: a legacy message of
// magic 0 with null key and value (offset, size, CRC, magic, attributes,
// two lengths).
const minBatchBytes = 26

func versionRange(v int16) int {
	switch {
	case v >= 13:
		return 2
	case v >= 9:
		return 1
	}
	return 0
}

// minResponsePartition is the smallest partition of a ProduceResponse of
// version v on the wire.
func minResponsePartition(v int16) int64 {
	n := int64(4 + 2 + 8) // partition, error_code, base_offset
	if v >= 2 {
		n += 8 // log_append_time_ms
	}
	if v >= 5 {
		n += 8 // log_start_offset
	}
	switch {
	case v >= 9:
		n += 3 // record_errors, error_message, tags: one byte each
	case v >= 8:
		n += 4 + 2
	}
	return n
}

// walker walks Kafka bytes without allocating, for the plausibility
// checks: the first error stops it.
type walker struct {
	r        kbin.Reader
	flexible bool
	err      error
}

var errTruncatedBody = errors.New("truncated")

// readCount reads an array length, compact when flexible.
func readCount(r *kbin.Reader, flexible bool) int64 {
	if flexible {
		// As kmsg reads it (kbin.Reader.CompactArrayLen): a length past
		// int32 wraps to negative, a null array.
		return int64(int32(r.Uvarint()) - 1)
	}
	return int64(r.Int32())
}

// count reads an array length (compact when flexible) and checks it
// against least bytes per element; a null array is empty.
func (w *walker) count(what string, least int64) int {
	if w.err != nil {
		return 0
	}
	n := readCount(&w.r, w.flexible)
	switch {
	case !w.r.Ok():
		w.err = errTruncatedBody
	case n < 0:
		return 0
	case n*least > int64(len(w.r.Src)):
		w.err = fmt.Errorf("%d %s announced in %d bytes", n, what, len(w.r.Src))
		return 0
	}
	return int(n)
}

// str skips a nullable string, bytes skips nullable bytes: the same on
// the wire but for the width of a classic length.
func (w *walker) str() {
	if w.flexible {
		w.r.UnsafeCompactNullableString()
	} else {
		w.r.UnsafeNullableString()
	}
}

func (w *walker) bytes() {
	if w.flexible {
		w.r.CompactNullableBytes()
	} else {
		w.r.NullableBytes()
	}
}

// tags skips the tagged fields of a flexible version.
func (w *walker) tags() {
	if !w.flexible || w.err != nil {
		return
	}
	n, _, err := skipTags(w.r.Src)
	if err != nil {
		w.err = fmt.Errorf("tagged fields: %w", err)
		return
	}
	w.r.Src = w.r.Src[n:]
}

// topic skips a topic's name, or its ID from v13.
func (w *walker) topic(v int16) {
	if v >= 13 {
		w.r.Span(16)
	} else {
		w.str()
	}
}

// done is the walk's error, a truncation included.
func (w *walker) done() error {
	if w.err == nil && !w.r.Ok() {
		w.err = errTruncatedBody
	}
	if errors.Is(w.err, errTruncatedBody) {
		return nil // kmsg says what is wrong
	}
	return w.err
}

// plausibleProduceRequest refuses a ProduceRequest body of version v whose
// array counts its bytes cannot hold.
func plausibleProduceRequest(body []byte, v int16) error {
	w := walker{r: kbin.Reader{Src: body}, flexible: v >= 9}
	if v >= 3 {
		w.str() // transactional_id
	}
	w.r.Int16() // acks
	w.r.Int32() // timeout_ms
	minPart := int64(8)
	if w.flexible {
		minPart = 6
	}
	for range w.count("topics", minRequestTopic[versionRange(v)]) {
		w.topic(v)
		for range w.count("partitions", minPart) {
			w.r.Int32() // partition
			w.bytes()   // records
			w.tags()
		}
		w.tags()
	}
	return w.done()
}

// plausibleProduceResponse refuses a ProduceResponse body of version v
// whose array counts its bytes cannot hold.
func plausibleProduceResponse(body []byte, v int16) error {
	w := walker{r: kbin.Reader{Src: body}, flexible: v >= 9}
	minPart := minResponsePartition(v)
	for range w.count("topics", minResponseTopic[versionRange(v)]) {
		w.topic(v)
		for range w.count("partitions", minPart) {
			w.r.Span(4 + 2 + 8) // partition, error_code, base_offset
			if v >= 2 {
				w.r.Int64() // log_append_time_ms
			}
			if v >= 5 {
				w.r.Int64() // log_start_offset
			}
			if v >= 8 {
				for range w.count("record errors", minRecordError[min(versionRange(v), 1)]) {
					w.r.Int32() // batch_index
					w.str()     // batch_index_error_message
					w.tags()
				}
				w.str() // error_message
			}
			w.tags()
		}
		w.tags()
	}
	return w.done()
}
