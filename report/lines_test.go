package report

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/detect"
)

// TestLinesOddText: whatever a name off the wire holds, a finding stays one
// line of printable UTF-8, with the odd name quoted.
func TestLinesOddText(t *testing.T) {
	hostile := "bad\xff\x1b[31mred\nline\t"
	f := findings()[2]
	f.ClientID, f.Topic = &hostile, hostile
	f.Reason = "odd\nreason"
	var buf bytes.Buffer
	if err := NewLines(&buf).Finding(f); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("not one line: %q", out)
	}
	if !utf8.ValidString(out) || strings.ContainsAny(strings.TrimSuffix(out, "\n"), "\x1b\t\r\n") {
		t.Errorf("raw bytes in the line: %q", out)
	}
	for _, want := range []string{
		`DUPLICATED "bad\xff\x1b[31mred\nline\t"/3 `,
		`client.id "bad\xff\x1b[31mred\nline\t" `,
		`: "odd\nreason"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("line lacks %s: %s", want, out)
		}
	}
}

// TestLinesNoAttempts: a finding without attempts or offsets (never made by
// detect, but a Writer takes any value) prints dashes.
func TestLinesNoAttempts(t *testing.T) {
	var buf bytes.Buffer
	if err := NewLines(&buf).Finding(detect.Finding{Verdict: detect.Unconfirmed, Topic: "t", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	want := `- UNCONFIRMED t/0 invalid AddrPort -> invalid AddrPort client.id (null) pid 0 crc 0x00000000 attempts - offsets -: r` + "\n"
	if buf.String() != want {
		t.Errorf("got  %q\nwant %q", buf.String(), want)
	}
}

// recorder is a Writer that keeps what it is handed and fails as told.
type recorder struct {
	findings  []detect.Finding
	summaries int
	err       error
}

func (r *recorder) Finding(f detect.Finding) error { r.findings = append(r.findings, f); return r.err }
func (r *recorder) Summary(Summary) error          { r.summaries++; return r.err }

func TestMulti(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	tests := []struct {
		name string
		errs []error
		want error
	}{
		{"none", nil, nil},
		{"all succeed", []error{nil, nil, nil}, nil},
		{"middle fails", []error{nil, errA, nil}, errA},
		{"first error wins", []error{errA, errB}, errA},
		{"last fails", []error{nil, nil, errB}, errB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := make([]*recorder, len(tt.errs))
			ws := make([]Writer, len(tt.errs))
			for i, err := range tt.errs {
				rs[i] = &recorder{err: err}
				ws[i] = rs[i]
			}
			m := Multi(ws...)
			if len(ws) > 0 {
				ws[0] = &recorder{} // Multi keeps its own slice
			}
			fs := findings()
			for _, f := range fs {
				if err := m.Finding(f); err != tt.want {
					t.Errorf("Finding: %v, want %v", err, tt.want)
				}
			}
			if err := m.Summary(summary()); err != tt.want {
				t.Errorf("Summary: %v, want %v", err, tt.want)
			}
			for i, r := range rs {
				if len(r.findings) != len(fs) || r.summaries != 1 {
					t.Errorf("writer %d: %d findings, %d summaries; want %d, 1", i, len(r.findings), r.summaries, len(fs))
				}
			}
		})
	}
}

// TestSummaryDrops: kernel drops of a live capture show in every summary;
// a run without drops (every file run) prints as before.
func TestSummaryDrops(t *testing.T) {
	for _, drops := range []int64{0, 3} {
		s := summary()
		s.Drops = drops
		for _, f := range formats {
			var buf bytes.Buffer
			if err := f.new(&buf).Summary(s); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"table": "1234 (567890 bytes; 3 more dropped by the kernel, not analyzed)",
				"lines": "1234 (567890 bytes; 3 more dropped by the kernel, not analyzed)", "jsonl": `"bytes":567890,"drops":3,`}[f.ext]
			if got := strings.Contains(buf.String(), want); got != (drops > 0) {
				t.Errorf("%s with %d drops: contains %q = %v:\n%s", f.ext, drops, want, got, buf.String())
			}
			if drops == 0 && strings.Contains(buf.String(), "drop") {
				t.Errorf("%s without drops mentions them:\n%s", f.ext, buf.String())
			}
		}
	}
}

// TestSummaryConnectionsOmitted: a live run lists a bounded number of Kafka
// connections; the count in every summary still covers them all.
func TestSummaryConnectionsOmitted(t *testing.T) {
	s := summary()
	listed := len(s.KafkaConnections)
	s.KafkaConnectionsOmitted = 5000
	row := regexp.MustCompile(`Kafka connections *│ *` + strconv.Itoa(listed+5000) + ` `)
	for _, f := range formats {
		var buf bytes.Buffer
		if err := f.new(&buf).Summary(s); err != nil {
			t.Fatal(err)
		}
		var ok bool
		if f.ext == "jsonl" {
			ok = strings.Contains(buf.String(), `"kafka_connections_omitted":5000`)
		} else {
			ok = row.MatchString(buf.String())
		}
		if !ok {
			t.Errorf("%s does not count the %d omitted connections:\n%s", f.ext, 5000, buf.String())
		}
	}
}
