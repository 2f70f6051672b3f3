package report

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/olekukonko/tablewriter/tw"
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

// PrintableBytes is a record's key, value or header value as every text
// output shows it: "(null)" when full (its length on the wire) is
// negative, else b through Printable; b cut shorter than full says the
// full length, "... (N bytes)".
func PrintableBytes(b []byte, full int) string {
	if full < 0 {
		return "(null)"
	}
	s := Printable(string(b))
	if full > len(b) {
		s += fmt.Sprintf("... (%d bytes)", full)
	}
	return s
}

// writeRecords writes the table of f's records to ts's buffer.
func writeRecords(ts *tables, f *detect.Finding) error {
	b := ts.b
	fmt.Fprintf(b, "   first %s of the batch (first attempt)\n", plural(int64(len(f.Records)), "record"))
	tbl := ts.get(right, left, left, left, left)
	tbl.Header("OFFSET", "TIMESTAMP (UTC)", "KEY", "VALUE", "HEADERS")
	for _, r := range f.Records {
		off := "-"
		if r.Offset >= 0 {
			off = itoa(r.Offset)
		}
		row := []string{off, recordTime(r.TimestampMillis), PrintableBytes(r.Key, r.KeyLen), PrintableBytes(r.Value, r.ValueLen), headersText(r.Headers)}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// KindOf is f's kind; a Finding built by hand without one is a batch
// finding (detect.KindBatch).
func KindOf(f *detect.Finding) detect.Kind {
	if f.Kind == "" {
		return detect.KindBatch
	}
	return f.Kind
}

// writeRecordCopies writes the records of a record-level finding, each
// with the offset of every copy, to ts's buffer: their content when decode
// read it (--records N), else the record's print (the hash it was matched
// by) in a PRINT column.
func writeRecordCopies(ts *tables, f *detect.Finding) error {
	b := ts.b
	more := ""
	if f.RecordsOmitted > 0 {
		more = fmt.Sprintf(" (%d more not listed)", f.RecordsOmitted)
	}
	known := slices.ContainsFunc(f.Records, func(r detect.Record) bool { return r.Known })
	prints := slices.ContainsFunc(f.Records, func(r detect.Record) bool { return !r.Known })
	if prints {
		more += "; --records N shows their content"
	}
	fmt.Fprintf(b, "   records sent again%s\n", more)
	align, header := []tw.Align{left}, []string{"COPIES (CORR ID: OFFSET)"}
	if known {
		align, header = append(align, left, left, left, left), append(header, "TIMESTAMP (UTC)", "KEY", "VALUE", "HEADERS")
	}
	if prints {
		align, header = append(align, left), append(header, "PRINT")
	}
	tbl := ts.get(align...)
	tbl.Header(header)
	for _, r := range f.Records {
		copies := make([]string, len(r.Copies))
		for i, c := range r.Copies {
			off := "-"
			if c.Offset >= 0 {
				off = itoa(c.Offset)
			}
			corr := "?"
			if c.Attempt >= 0 && c.Attempt < len(f.Attempts) {
				corr = itoa(f.Attempts[c.Attempt].CorrelationID)
			}
			copies[i] = corr + ": " + off
		}
		row := []string{strings.Join(copies, ", ")}
		switch {
		case known && r.Known:
			row = append(row, recordTime(r.TimestampMillis), PrintableBytes(r.Key, r.KeyLen), PrintableBytes(r.Value, r.ValueLen), headersText(r.Headers))
		case known:
			row = append(row, "-", "-", "-", "-")
		}
		if prints {
			p := "-"
			if !r.Known {
				p = fmt.Sprintf("%016x", r.Hash)
			}
			row = append(row, p)
		}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// headersText shows record headers as key=value, "-" for none.
func headersText(headers []detect.RecordHeader) string {
	hs := make([]string, len(headers))
	for i, h := range headers {
		hs[i] = Printable(h.Key) + "=" + PrintableBytes(h.Value, h.ValueLen)
	}
	if len(hs) == 0 {
		return "-"
	}
	return strings.Join(hs, ", ")
}

// jsonRecord is one record of a finding. Key and value (and a header's
// value) are JSON strings when their bytes are valid UTF-8; other bytes go
// base64-encoded in key_base64 or value_base64 instead. Null is null. In a
// record-level finding, the content fields are there only when known
// (--records), and record_hash and copies are added.
type jsonRecord struct {
	Offset      *int64 `json:"offset"`
	OffsetDelta int32  `json:"offset_delta"`
	*jsonRecordContent
	Hash   string           `json:"record_hash,omitempty"`
	Copies []jsonRecordCopy `json:"copies,omitempty"`
}

type jsonRecordContent struct {
	Timestamp   *string            `json:"timestamp"`
	Key         *string            `json:"key"`
	KeyBase64   string             `json:"key_base64,omitempty"`
	KeyLen      int                `json:"key_len"`
	Value       *string            `json:"value"`
	ValueBase64 string             `json:"value_base64,omitempty"`
	ValueLen    int                `json:"value_len"`
	Headers     []jsonRecordHeader `json:"headers"`
}

type jsonRecordCopy struct {
	Attempt     int    `json:"attempt"`
	OffsetDelta int32  `json:"offset_delta"`
	Offset      *int64 `json:"offset"`
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

func toJSONRecords(recs []detect.Record, recordLevel bool) []jsonRecord {
	if len(recs) == 0 {
		return nil
	}
	out := make([]jsonRecord, len(recs))
	for i := range recs {
		r := &recs[i]
		j := &out[i]
		j.OffsetDelta = r.OffsetDelta
		j.Offset = offsetPtr(r.Offset)
		if recordLevel {
			j.Hash = fmt.Sprintf("%016x", r.Hash)
			j.Copies = make([]jsonRecordCopy, len(r.Copies))
			for k, c := range r.Copies {
				j.Copies[k] = jsonRecordCopy{Attempt: c.Attempt, OffsetDelta: c.OffsetDelta, Offset: offsetPtr(c.Offset)}
			}
			if !r.Known {
				continue
			}
		}
		jc := &jsonRecordContent{KeyLen: r.KeyLen, ValueLen: r.ValueLen}
		j.jsonRecordContent = jc
		if r.TimestampMillis >= 0 {
			ts := recordTime(r.TimestampMillis)
			jc.Timestamp = &ts
		}
		jc.Key, jc.KeyBase64 = jsonBytes(r.Key, r.KeyLen)
		jc.Value, jc.ValueBase64 = jsonBytes(r.Value, r.ValueLen)
		jc.Headers = make([]jsonRecordHeader, len(r.Headers))
		for k, h := range r.Headers {
			jh := &jc.Headers[k]
			jh.Key, jh.ValueLen = h.Key, h.ValueLen
			jh.Value, jh.ValueBase64 = jsonBytes(h.Value, h.ValueLen)
		}
	}
	return out
}

// offsetPtr is nil for an unknown offset (-1).
func offsetPtr(off int64) *int64 {
	if off < 0 {
		return nil
	}
	return &off
}
