package main

import (
	"github.com/kdupcap/kdupcap/profile"
	"github.com/kdupcap/kdupcap/report"
)

// writeProducers writes the producer profiles (settings read off the wire,
// latency per broker, diagnosis) of a run, when out writes them; first the
// run's timeline (latency per broker over capture time of every answered
// exchange), made by tl only when out draws it (a copy of up to 2 MiB).
func writeProducers(out report.Writer, producers []profile.Producer, tl func() *profile.Timeline) error {
	if tw, ok := out.(report.TimelineWriter); ok && report.DrawsTimeline(out) {
		if err := tw.Timeline(tl()); err != nil {
			return err
		}
	}
	pw, ok := out.(report.ProducerWriter)
	if !ok {
		return nil
	}
	return pw.Producers(producers)
}
