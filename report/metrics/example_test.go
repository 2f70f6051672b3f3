package metrics_test

import (
	"fmt"
	"os"

	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/metrics"
)

// A live run writes each finding to the terminal and to the metrics at
// once, and feeds the metrics the stages' totals now and then.
func ExampleNew() {
	m, err := metrics.New(nil, metrics.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := report.Multi(report.NewLines(os.Stdout), m)
	m.Update(report.Counters{Packets: 10, ProduceRequests: 2})
	m.ObserveProduceLatency("orders", 0.004)
	if err := w.Summary(report.Summary{}); err != nil {
		fmt.Println(err)
	}
	// http.Handle("/metrics", m.Handler())
}
