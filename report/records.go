package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/detect"
)

// Records of a finding (kdupcap --records N) are shown so that the user
// recognises the messages: in a table under the finding's attempts, and in
// JSON as "records", present only when the finding has records.

// recordTimeLayout is RFC 3339 in milliseconds, the unit of record
// timestamps.
const recordTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// recordTime is a record timestamp in RFC 3339, "-" when unknown.
func recordTime(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(recordTimeLayout)
}

// bytesText shows record bytes safely: "(null)" for null, printable text
// as is, anything else quoted Go-style; a cut value says its full length.
func bytesText(b []byte, full int) string {
	if full < 0 {
		return "(null)"
	}
	s := printable(string(b))
	if full > len(b) {
		s += fmt.Sprintf("... (%d bytes)", full)
	}
	return s
}

// writeRecords writes the table of f's records to b.
func writeRecords(b *bytes.Buffer, f *detect.Finding) error {
	fmt.Fprintf(b, "   first %s of the batch (first attempt)\n", plural(int64(len(f.Records)), "record"))
	tbl := newTable(b, right, left, left, left, left)
	tbl.Header("OFFSET", "TIMESTAMP (UTC)", "KEY", "VALUE", "HEADERS")
	for _, r := range f.Records {
		off := "-"
		if r.Offset >= 0 {
			off = itoa(r.Offset)
		}
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = printable(h.Key) + "=" + bytesText(h.Value, h.ValueLen)
		}
		headers := strings.Join(hs, ", ")
		if headers == "" {
			headers = "-"
		}
		row := []string{off, recordTime(r.TimestampMillis), bytesText(r.Key, r.KeyLen), bytesText(r.Value, r.ValueLen), headers}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// jsonRecord is one record of a finding. Key and value (and a header's
// value) are JSON strings when their bytes are valid UTF-8; other bytes go
// base64-encoded in key_base64 or value_base64 instead. Null is null.
type jsonRecord struct {
	Offset      *int64             `json:"offset"`
	OffsetDelta int32              `json:"offset_delta"`
	Timestamp   *string            `json:"timestamp"`
	Key         *string            `json:"key"`
	KeyBase64   string             `json:"key_base64,omitempty"`
	KeyLen      int                `json:"key_len"`
	Value       *string            `json:"value"`
	ValueBase64 string             `json:"value_base64,omitempty"`
	ValueLen    int                `json:"value_len"`
	Headers     []jsonRecordHeader `json:"headers"`
}

type jsonRecordHeader struct {
	Key         string  `json:"key"`
	Value       *string `json:"value"`
	ValueBase64 string  `json:"value_base64,omitempty"`
	ValueLen    int     `json:"value_len"`
}

// jsonBytes splits b into its text form or its base64 form.
func jsonBytes(b []byte, full int) (*string, string) {
	switch {
	case full < 0:
		return nil, ""
	case utf8.Valid(b):
		s := string(b)
		return &s, ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

func toJSONRecords(recs []detect.Record) []jsonRecord {
	if len(recs) == 0 {
		return nil
	}
	out := make([]jsonRecord, len(recs))
	for i := range recs {
		r := &recs[i]
		j := &out[i]
		j.OffsetDelta, j.KeyLen, j.ValueLen = r.OffsetDelta, r.KeyLen, r.ValueLen
		if r.Offset >= 0 {
			off := r.Offset
			j.Offset = &off
		}
		if r.TimestampMillis >= 0 {
			ts := recordTime(r.TimestampMillis)
			j.Timestamp = &ts
		}
		j.Key, j.KeyBase64 = jsonBytes(r.Key, r.KeyLen)
		j.Value, j.ValueBase64 = jsonBytes(r.Value, r.ValueLen)
		j.Headers = make([]jsonRecordHeader, len(r.Headers))
		for k, h := range r.Headers {
			jh := &j.Headers[k]
			jh.Key, jh.ValueLen = h.Key, h.ValueLen
			jh.Value, jh.ValueBase64 = jsonBytes(h.Value, h.ValueLen)
		}
	}
	return out
}
