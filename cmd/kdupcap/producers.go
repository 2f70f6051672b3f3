package main

import (
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// writeProducers writes the producer profiles (settings read off the wire,
// latency per broker, diagnosis) that prof built from the run's exchanges
// and findings, when out writes them.
func writeProducers(out report.Writer, prof *detect.Profiler, findings []detect.Finding) error {
	pw, ok := out.(report.ProducerWriter)
	if !ok {
		return nil
	}
	return pw.Producers(prof.Producers(findings))
}
