package main

import (
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// writeProducers writes the producer profiles (settings read off the wire,
// latency per broker, diagnosis) of a run, when out writes them.
func writeProducers(out report.Writer, producers []profile.Producer) error {
	pw, ok := out.(report.ProducerWriter)
	if !ok {
		return nil
	}
	return pw.Producers(producers)
}
