package main

import (
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// writeProducers writes the producer profiles (settings read off the wire,
// latency per broker, diagnosis) that prof built from the run's exchanges
// and findings, when out writes them.
func writeProducers(out report.Writer, prof *detect.Profiler) error {
	pw, ok := out.(report.ProducerWriter)
	if !ok {
		return nil
	}
	return pw.Producers(prof.Producers())
}

// liveProfiler is the Profiler of a live run: a finding can be reported
// again until its batch is forgotten, --window after its last attempt, and
// a report waits at most --settle. The findings kept revisable are bounded
// as the batches remembered (--max-batches), a quarter of them as by
// default (detect.DefaultMaxPending).
func liveProfiler(cfg *liveConfig) *detect.Profiler {
	return detect.NewProfiler(detect.ProfilerOptions{Revisable: cfg.window + cfg.settle,
		MaxPending: max(cfg.maxBatches*detect.DefaultMaxPending/detect.DefaultMaxBatches, 1)})
}
