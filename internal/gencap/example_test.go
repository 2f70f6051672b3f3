package gencap_test

import (
	"fmt"
	"io"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

// Generate a 1 MiB loopback-style capture and look at its ground truth.
func ExampleGenerate() {
	cfg := gencap.Config{TargetBytes: 1 << 20, Seed: 1, Conns: 8, ResendEvery: 10}
	m, err := gencap.Generate(io.Discard, cfg) // usually an *os.File
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Totals.Bytes >= cfg.TargetBytes, len(m.Resends) > 0)
	r := m.Resends[0]
	fmt.Println(r.Broker, r.Verdict, len(r.CorrelationIDs))
	// Output:
	// true true
	// 127.0.1.2:9092 deduplicated 2
}
