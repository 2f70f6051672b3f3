package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
)

func TestPrintableBytes(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		full int
		want string
	}{
		{"null", nil, -1, "(null)"},
		{"empty", []byte{}, 0, `""`},
		{"text", []byte("order 42"), 8, "order 42"},
		{"control", []byte("a\nb"), 3, `"a\nb"`},
		{"binary", []byte{0xff, 0, 1}, 3, `"\xff\x00\x01"`},
		{"cut", []byte("abc"), 300, "abc... (300 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrintableBytes(tt.b, tt.full); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func recordsFinding() detect.Finding {
	return detect.Finding{
		Topic: "t", Verdict: detect.Duplicated, AppendedOffsets: []int64{5, 9},
		Attempts: []detect.Attempt{{CorrelationID: 1}},
		Records: []detect.Record{
			{Offset: -1, OffsetDelta: 0, TimestampMillis: 1700000000000, Key: []byte("k1"), KeyLen: 2,
				Value: []byte{0xff, 0x00}, ValueLen: 2,
				Headers: []detect.RecordHeader{{Key: "trace", Value: []byte("abc"), ValueLen: 3}}},
			{Offset: 10, OffsetDelta: 1, TimestampMillis: -1, KeyLen: -1, Value: []byte("v"), ValueLen: 1},
		},
	}
}

func TestRecordsTable(t *testing.T) {
	var out bytes.Buffer
	if err := streamTable(&out).Finding(recordsFinding()); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"first 2 records", "2023-11-14T22:13:20.000Z", `"\xff\x00"`, "trace=abc", "(null)", " 10 "} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func TestRecordsJSON(t *testing.T) {
	var out bytes.Buffer
	if err := NewJSON(&out).Finding(recordsFinding()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Records []map[string]any `json:"records"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 2 {
		t.Fatalf("records %v", got.Records)
	}
	r0, r1 := got.Records[0], got.Records[1]
	if r0["offset"] != nil || r0["key"] != "k1" || r0["value"] != nil || r0["value_base64"] != "/wA=" ||
		r0["timestamp"] != "2023-11-14T22:13:20.000Z" || r0["value_len"] != 2.0 {
		t.Errorf("record 0: %v", r0)
	}
	if r1["offset"] != 10.0 || r1["key"] != nil || r1["key_len"] != -1.0 || r1["timestamp"] != nil || r1["value"] != "v" {
		t.Errorf("record 1: %v", r1)
	}
	out.Reset()
	f := recordsFinding()
	f.Records = nil
	if err := NewJSON(&out).Finding(f); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), `"records"`) {
		t.Errorf("records key without records: %s", out.String())
	}
}
