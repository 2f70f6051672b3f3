package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

// recordCounts are the summary's counts of records the log holds more than
// once, as kdupcap's JSON gives them.
type recordCounts struct {
	Type              string `json:"type"`
	DuplicatedRecords int64  `json:"duplicated_records"`
	ExtraCopies       int64  `json:"extra_copies"`
	Possibly          int64  `json:"possibly_duplicated_records"`
	Topics            []struct {
		Topic             string `json:"topic"`
		DuplicatedRecords int64  `json:"duplicated_records"`
		ExtraCopies       int64  `json:"extra_copies"`
	} `json:"topics"`
}

// summaryCounts reads the counts of records off the summary line of
// kdupcap's JSON output.
func summaryCounts(t *testing.T, stdout string) recordCounts {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var c recordCounts
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &c); err != nil || c.Type != "summary" {
		t.Fatalf("last line is no summary (%v): %s", err, lines[len(lines)-1])
	}
	return c
}

// checkLogCounts compares the headline's numbers, the JSON summary's
// duplicated_records and extra_copies, with the broker's log read back:
// the records it holds k >= 2 times, and the sum of k-1. When some finding
// is unconfirmed (possibly_duplicated_records), the capture cannot tell
// all, and the log's counts must lie between the confirmed ones and those
// plus the possible. The per-topic counts must be the log's topic's.
func checkLogCounts(t *testing.T, log *kafkatest.Log, stdout string) {
	t.Helper()
	var records, extra int64
	for _, c := range log.Duplicates() {
		records++
		extra += int64(len(c.Records) - 1)
	}
	got := summaryCounts(t, stdout)
	t.Logf("log: %d records held more than once, %d extra copies; kdupcap: %d, %d (possibly %d more)",
		records, extra, got.DuplicatedRecords, got.ExtraCopies, got.Possibly)
	switch {
	case got.Possibly == 0 && (got.DuplicatedRecords != records || got.ExtraCopies != extra):
		t.Errorf("duplicated_records %d, extra_copies %d; the log holds %d records more than once, %d extra copies",
			got.DuplicatedRecords, got.ExtraCopies, records, extra)
	case got.Possibly > 0 && (got.DuplicatedRecords > records || records > got.DuplicatedRecords+got.Possibly || got.ExtraCopies > extra):
		t.Errorf("duplicated_records %d (possibly %d more), extra_copies %d; the log holds %d records more than once, %d extra copies",
			got.DuplicatedRecords, got.Possibly, got.ExtraCopies, records, extra)
	}
	for _, tc := range got.Topics {
		if tc.Topic != log.Topic {
			if tc.DuplicatedRecords != 0 {
				t.Errorf("topic %q: %d records duplicated, the log read back is of %q", tc.Topic, tc.DuplicatedRecords, log.Topic)
			}
			continue
		}
		if tc.DuplicatedRecords != got.DuplicatedRecords || tc.ExtraCopies != got.ExtraCopies {
			t.Errorf("topic %q: %d records duplicated, %d extra copies; the summary's are %d, %d",
				tc.Topic, tc.DuplicatedRecords, tc.ExtraCopies, got.DuplicatedRecords, got.ExtraCopies)
		}
	}
}

// tableRun runs `kdupcap analyze ARGS` (the table) and returns its stdout;
// it must exit 0.
func tableRun(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"analyze"}, args...), nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("kdupcap analyze %v exited %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

// TestHeadline: the table starts with the answer, the numbers of the
// findings' offsets (two batches of one record each appended twice; three
// records of one batch sent again under a new epoch), the producer and the
// one setting that fixes it; a capture of deduplicated re-sends says in
// one line that no record is in the log twice; and the JSON summary gives
// the same numbers.
func TestHeadline(t *testing.T) {
	tests := []struct {
		capture string
		head    []string // the first lines
		json    recordCounts
	}{
		{capture: "kcat-nonidempotent-timeout.pcap", head: []string{
			"The log holds 2 records twice (2 extra copies), from 2 re-sent batches.",
			"  topic:    realtraffic-4 (2 records twice)",
			`  producer: 127.0.0.1 client.id "kcat-realtraffic", librdkafka 2.0.2, not idempotent: 2 records twice`,
			"            fix: enable.idempotence=true",
			"",
			"#1 DUPLICATED  realtraffic-4/0  127.0.0.1:43524 -> 127.0.0.1:37813  client.id \"kcat-realtraffic\"  (connection 1)",
		}, json: recordCounts{DuplicatedRecords: 2, ExtraCopies: 2}},
		{capture: "rdkafka211-idempotent-epoch-bump.pcap", head: []string{
			"The log holds 3 records twice (3 extra copies), from 1 re-sent batch.",
			"  topic:    orders (3 records twice)",
			`  producer: 127.0.0.1 client.id "rdkafka", confluent-kafka-go (librdkafka 2.11.1), idempotent producer id 7822083043934455798: 3 records twice`,
			"            fix: transactional.id with read_committed consumers",
			"",
		}, json: recordCounts{DuplicatedRecords: 3, ExtraCopies: 3}},
		{capture: "kgo-v13-idempotent-timeout.pcap", head: []string{
			"No record is in the log twice: each of the 2 batches sent more than once is held once or not at all (deduplicated 2).",
			"",
		}},
		{capture: "seed-nonidempotent-retry.pcap", head: []string{
			"No record is known to be in the log twice, but up to 1 record may be: 1 re-sent batch unconfirmed (the capture does not show how many copies the log holds).",
			"  topic:    test (up to 1 record)",
		}, json: recordCounts{Possibly: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			out := tableRun(t, seedPath(tt.capture))
			lines := strings.Split(out, "\n")
			if len(lines) < len(tt.head) {
				t.Fatalf("%d lines:\n%s", len(lines), out)
			}
			for i, want := range tt.head {
				if lines[i] != want {
					t.Errorf("line %d:\n got %q\nwant %q", i+1, lines[i], want)
				}
			}
			got := summaryCounts(t, cliAnalyzeOK(t, seedPath(tt.capture)).Stdout)
			if got.DuplicatedRecords != tt.json.DuplicatedRecords || got.ExtraCopies != tt.json.ExtraCopies || got.Possibly != tt.json.Possibly {
				t.Errorf("JSON summary: duplicated_records %d extra_copies %d possibly_duplicated_records %d, want %d %d %d",
					got.DuplicatedRecords, got.ExtraCopies, got.Possibly, tt.json.DuplicatedRecords, tt.json.ExtraCopies, tt.json.Possibly)
			}
		})
	}
}

// findingHead matches the first line of a finding in the table: in full or
// in one line.
var findingHead = regexp.MustCompile(`(?m)^#(\d+) ([A-Z_]+)( [A-Z_]+)?  `)

// TestVerdictFlag: --verdict prints the findings of the verdicts listed
// only, in the table and in JSON, while the headline and the summary count
// every finding; a verdict that is none is a one-line error naming the
// flag, exit 2.
func TestVerdictFlag(t *testing.T) {
	file := seedPath("kgo-v13-idempotent-timeout.pcap") // 2 deduplicated
	tests := []struct {
		verdicts string
		want     []string // verdicts of the findings printed
	}{
		{"duplicated", nil},
		{"deduplicated", []string{"DEDUPLICATED", "DEDUPLICATED"}},
		{"duplicated,Deduplicated", []string{"DEDUPLICATED", "DEDUPLICATED"}},
		{"unconfirmed, single", nil},
	}
	for _, tt := range tests {
		t.Run(tt.verdicts, func(t *testing.T) {
			out := tableRun(t, "--verdict", tt.verdicts, file)
			var got []string
			for _, m := range findingHead.FindAllStringSubmatch(out, -1) {
				got = append(got, m[2])
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("findings printed %v, want %v:\n%s", got, tt.want, out)
			}
			if !strings.Contains(out, "deduplicated 2") || !strings.HasPrefix(out, "No record is in the log twice") {
				t.Errorf("the headline or the summary does not count every finding:\n%s", out)
			}
			res := cliAnalyzeOK(t, "--verdict", tt.verdicts, file)
			if n := len(res.Findings) + len(res.RecordFindings); n != len(tt.want) {
				t.Errorf("JSON: %d finding lines, want %d", n, len(tt.want))
			}
			if res.Summary.ByVerdict["deduplicated"] != 2 {
				t.Errorf("JSON summary by_verdict %v, want deduplicated 2", res.Summary.ByVerdict)
			}
		})
	}
	for _, bad := range []string{"bogus", "duplicated,twice", ","} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"analyze", "--verdict", bad, file}, nil, &stdout, &stderr)
		msg := stderr.String()
		if code != exitUsage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "verdict") || stdout.Len() != 0 {
			t.Errorf("--verdict %q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the flag", bad, code, stdout.String(), msg)
		}
	}
}

// TestDefaultFolding: by default a harmless finding (here deduplicated) is
// one line, with no table of attempts, and the table says so; a harmful
// one is in full; --all prints every finding in full; JSON prints every
// finding in full either way.
func TestDefaultFolding(t *testing.T) {
	tests := []struct {
		capture  string
		harmless int
		harmful  int
	}{
		{"kgo-v13-idempotent-timeout.pcap", 2, 0},
		{"seed-idempotent-retry.pcap", 1, 0},
		{"kcat-nonidempotent-timeout.pcap", 0, 2},
		{"seed-nonidempotent-retry.pcap", 0, 1}, // unconfirmed, not idempotent
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			file := seedPath(tt.capture)
			out := tableRun(t, file)
			oneLine, full := 0, 0
			lines := strings.Split(out, "\n")
			for i, l := range lines {
				if !findingHead.MatchString(l) {
					continue
				}
				next := ""
				if i+1 < len(lines) {
					next = lines[i+1]
				}
				// A finding in full goes on with its indented lines.
				if strings.HasPrefix(next, "   ") {
					full++
				} else {
					oneLine++
					if !strings.Contains(l, "attempts") || !strings.Contains(l, "DEDUPLICATED") {
						t.Errorf("one-line finding: %q", l)
					}
				}
			}
			if oneLine != tt.harmless || full != tt.harmful {
				t.Errorf("%d findings in one line, %d in full; want %d, %d:\n%s", oneLine, full, tt.harmless, tt.harmful, out)
			}
			if said := strings.Contains(out, "--all shows them in full"); said != (tt.harmless > 0) {
				t.Errorf("the note on one-line findings: %v, want %v", said, tt.harmless > 0)
			}
			all := tableRun(t, "--all", file)
			if n := strings.Count(all, "│ CORR ID │"); n != tt.harmless+tt.harmful {
				t.Errorf("--all: %d tables of attempts, want %d", n, tt.harmless+tt.harmful)
			}
			res := cliAnalyzeOK(t, file)
			for _, f := range res.Findings {
				if len(f.Attempts) < 2 {
					t.Errorf("JSON finding of %d attempts", len(f.Attempts))
				}
			}
			if n := len(res.Findings) + len(res.RecordFindings); n != tt.harmless+tt.harmful {
				t.Errorf("JSON: %d findings, want %d", n, tt.harmless+tt.harmful)
			}
		})
	}
}

// TestNoKeyColumnWithoutRecords: without --records, the records of a
// record-level finding are shown by their print, in no KEY column; with
// it, their content is.
func TestNoKeyColumnWithoutRecords(t *testing.T) {
	file := seedPath("rdkafka211-idempotent-epoch-bump.pcap")
	out := tableRun(t, file)
	if strings.Contains(out, "│ KEY") || strings.Contains(out, "--records N shows content)") {
		t.Errorf("a KEY column without --records:\n%s", out)
	}
	if !strings.Contains(out, "PRINT") || !strings.Contains(out, "1e6d5313dbeaa6ac") {
		t.Errorf("no record print:\n%s", out)
	}
	with := tableRun(t, "--records", "5", file)
	if !strings.Contains(with, "KEY") || strings.Contains(with, "PRINT") {
		t.Errorf("--records: no content columns, or prints:\n%s", with)
	}
}
