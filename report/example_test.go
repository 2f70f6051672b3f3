package report_test

import (
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

func ExampleNewLines() {
	id := "kcat-realtraffic"
	t := time.Date(2026, 11, 29, 20, 25, 28, 706971000, time.UTC)
	f := detect.Finding{
		Client: netip.MustParseAddrPort("127.0.0.1:43524"), Broker: netip.MustParseAddrPort("127.0.0.1:37813"),
		ClientID: &id, Topic: "realtraffic-4", ProducerID: -1, BatchCRC: 0xaf65e89b,
		Verdict: detect.Duplicated, AppendedOffsets: []int64{2, 4},
		Reason: "attempts 5 and 7 were appended at offsets 2 and 4: the log holds the batch twice",
		Attempts: []detect.Attempt{
			{CorrelationID: 5, Time: t.Add(-time.Second)},
			{CorrelationID: 7, Time: t, Cause: detect.CauseClientTimeout, GapMillis: 1000},
		},
	}
	w := report.NewLines(os.Stdout)
	if err := w.Finding(f); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 2026-11-29T20:25:28.706971000Z DUPLICATED realtraffic-4/0 127.0.0.1:43524 -> 127.0.0.1:37813 client.id "kcat-realtraffic" pid -1 crc 0xaf65e89b attempts 5,7 offsets 2,4: attempts 5 and 7 were appended at offsets 2 and 4: the log holds the batch twice
}

func ExampleStatusLine() {
	c := report.Counters{Packets: 48210, Bytes: 31_500_000, Connections: 6, ProduceRequests: 9120}
	findings := map[detect.Verdict]int64{detect.Duplicated: 2, detect.Deduplicated: 5}
	fmt.Println(report.StatusLine(c, findings, 5*time.Minute))
	// Output:
	// 5m0s: packets 48210 (31.5 MB), drops 0, connections 6, produce requests 9120, findings 7 (duplicated 2, deduplicated 5)
}

// A run writes each finding to the terminal and, as JSON Lines, to a file
// at once; package metrics's Exporter is one more Writer to hand Multi.
func ExampleMulti() {
	f, err := os.Create("findings.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	w := report.Multi(report.NewLines(os.Stdout), report.NewJSON(f))
	if err := w.Summary(report.Summary{}); err != nil {
		fmt.Println(err)
	}
}
