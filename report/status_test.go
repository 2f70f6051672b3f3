package report

import (
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
)

func TestStatusLine(t *testing.T) {
	tests := []struct {
		name     string
		c        Counters
		findings map[detect.Verdict]int64
		elapsed  time.Duration
		want     string
	}{
		{"start", Counters{}, nil, 0,
			"0s: packets 0 (0 B), drops 0, connections 0, produce requests 0, findings 0"},
		{"running", Counters{Packets: 12345, Bytes: 2_100_000, Drops: 3, Connections: 4, ProduceRequests: 456},
			map[detect.Verdict]int64{detect.Deduplicated: 1, detect.Duplicated: 2, detect.Rejected: 0},
			90*time.Second + 400*time.Millisecond,
			"1m30s: packets 12345 (2.1 MB), drops 3, connections 4, produce requests 456, findings 3 (duplicated 2, deduplicated 1)"},
		{"trouble shows", Counters{Packets: 1, Bytes: 999, Gaps: 2, Malformed: 5, EvictedBatches: 7},
			map[detect.Verdict]int64{"odd\n": 1, detect.Single: 1, "another": 2}, 26 * time.Hour,
			`26h0m0s: packets 1 (999 B), drops 0, gaps 2, connections 0, produce requests 0, malformed 5, evicted connections 0 batches 7 pending 0, findings 4 (single 1, another 2, "odd\n" 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StatusLine(tt.c, tt.findings, tt.elapsed)
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.ContainsAny(got, "\n\r") {
				t.Errorf("not one line: %q", got)
			}
		})
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {1449, "1.4 kB"}, {999_949, "999.9 kB"},
		{999_950, "1.0 MB"}, {2_100_000, "2.1 MB"}, {5e9, "5.0 GB"}, {7e12, "7.0 TB"}, {3e15, "3000.0 TB"},
		{-1, "-1 B"}, {-2500, "-2.5 kB"},
	}
	for _, tt := range tests {
		if got := byteSize(tt.n); got != tt.want {
			t.Errorf("byteSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
