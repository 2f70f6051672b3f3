package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdupcap/kdupcap/detect"
)

// TestTableOddText: names come off the wire (client.id, topic), so the
// table must not pass control characters or invalid UTF-8 to a terminal,
// nor let a newline or an escape sequence break a table's alignment.
func TestTableOddText(t *testing.T) {
	hostile := "bad\xff\x1b[31mred\nline\t"
	tests := []struct {
		name   string
		change func(f *detect.Finding, s *Summary)
		want   string // must appear, escaped
	}{
		{"client.id in the finding", func(f *detect.Finding, s *Summary) { f.ClientID = &hostile }, `"bad\xff\x1b[31mred\nline\t"`},
		{"topic in the finding", func(f *detect.Finding, s *Summary) { f.Topic = hostile }, `"bad\xff\x1b[31mred\nline\t"/0`},
		{"client ids of a connection", func(f *detect.Finding, s *Summary) {
			s.KafkaConnections[0].ClientIDs = []string{hostile, "ok"}
		}, `"bad\xff\x1b[31mred\nline\t", ok`},
		{"topic in the summary", func(f *detect.Finding, s *Summary) { s.ByTopic[0].Topic = hostile }, `"bad\xff\x1b[31mred\nline\t"`},
		{"empty client id of a connection", func(f *detect.Finding, s *Summary) {
			s.KafkaConnections[0].ClientIDs = []string{"", "ok"}
		}, `"", ok`},
		{"file name", func(f *detect.Finding, s *Summary) {
			s.Files = []string{hostile}
			s.Errors = []string{"capture: " + hostile + ": truncated at byte 24"}
		}, `"capture: bad\xff\x1b[31mred\nline\t: truncated at byte 24"`},
		{"long topic", func(f *detect.Finding, s *Summary) {
			f.Topic = strings.Repeat("t", 249)
			s.ByTopic[0].Topic = strings.Repeat("t", 249)
		}, strings.Repeat("t", 249)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := findings()[0], summary()
			tt.change(&f, &s)
			var buf bytes.Buffer
			write(t, NewTable(&buf), []detect.Finding{f}, s)
			out := buf.String()
			if !utf8.ValidString(out) || strings.ContainsAny(out, "\x1b\t\r") {
				t.Errorf("raw bytes in the table:\n%q", out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %s:\n%s", tt.want, out)
			}
			// Every line of a table has the width of its top border.
			width := 0
			for line := range strings.SplitSeq(out, "\n") {
				switch {
				case strings.HasPrefix(line, "┌"):
					width = utf8.RuneCountInString(line)
				case width > 0 && (strings.HasPrefix(line, "│") || strings.HasPrefix(line, "├") || strings.HasPrefix(line, "└")):
					if n := utf8.RuneCountInString(line); n != width {
						t.Errorf("line %d runes wide in a table %d wide: %q", n, width, line)
					}
				default:
					width = 0
				}
			}
		})
	}
}

// TestJSONOddText: whatever bytes a name holds, each line stays one valid
// JSON object of valid UTF-8 with no raw control character.
func TestJSONOddText(t *testing.T) {
	hostile := "bad\xff\x1b[31mred\nline\u2028<&>"
	f, s := findings()[0], summary()
	f.ClientID, f.Topic = &hostile, hostile
	s.KafkaConnections[0].ClientIDs = []string{hostile}
	s.ByTopic[0].Topic = hostile
	var buf bytes.Buffer
	write(t, NewJSON(&buf), []detect.Finding{f}, s)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(lines), buf.String())
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) || !utf8.ValidString(line) || strings.ContainsAny(line, "\x1b\u2028") {
			t.Errorf("line %d: %q", i+1, line)
		}
	}
	var got struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil || got.ClientID != "bad\ufffd\x1b[31mred\nline\u2028<&>" {
		t.Errorf("client_id %q, %v", got.ClientID, err)
	}
}
