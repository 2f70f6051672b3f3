package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// ProduceFunc writes values to topic on the broker at addr.
type ProduceFunc func(ctx context.Context, addr, topic string, values []string) error

// Scenario is one run: a fresh cluster with Faults, a topic of Partitions
// partitions, Records distinct values written by a producer, the traffic
// optionally captured, then the log read back.
type Scenario struct {
	Name       string // names the values "rec-<Name>-<i>"
	Topic      string
	Partitions int32
	Records    int
	Faults     []Fault
	// Producer configures the kgo producer used when Produce is nil.
	Producer Producer
	// Produce, if set, replaces the kgo producer (e.g. KcatProduce).
	Produce ProduceFunc
	// LegacyVersions advertises Produce and Fetch from v0, for librdkafka's
	// gzip, snappy and lz4 (see Cluster.SetLegacyVersions).
	LegacyVersions bool
	// SASL, when set, makes the cluster require SASL with that superuser;
	// the kgo producer (Produce nil) and the read back authenticate with
	// it, a ProduceFunc must itself (KcatProduce(SASL.KcatSettings()...)).
	SASL *SASL
	// TLS, when set, puts the cluster's listener behind TLS (tls.go); the
	// kgo producer and the read back connect over it.
	TLS *TLS
}

// Result is what a Scenario left behind.
type Result struct {
	Log    *Log
	Events []Event  // the faults applied
	Values []string // the values produced, in order
	Port   int      // the broker's port
	Pcap   string   // the capture file, "" if not captured
	Stats  CaptureStats
}

// Run runs s. If pcap is not "", the broker's traffic is captured to that file
// with tcpdump (see CanCapture) from before the producer connects until it has
// closed. The log is read back after the capture stopped, so the capture holds
// only the producer's traffic. ctx bounds the whole run; a producer error is
// returned with the partial Result.
func Run(ctx context.Context, s Scenario, pcap string) (*Result, error) {
	parts := max(s.Partitions, 1)
	kopts := []kfake.Opt{kfake.SeedTopics(parts, s.Topic)}
	if s.SASL != nil {
		kopts = append(kopts, s.SASL.clusterOpts()...)
	}
	c, err := NewCluster(s.Faults, kopts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetLegacyVersions(s.LegacyVersions)
	if s.TLS != nil {
		c.SetTLS(s.TLS.server())
	}

	res := &Result{Values: Values(s.Name, s.Records), Port: c.Port()}
	var capt *Capture
	if pcap != "" {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		capt, err = StartCapture(sctx, pcap, c.Port())
		cancel()
		if err != nil {
			return res, err
		}
		res.Pcap = pcap
	}

	produce := s.Produce
	if produce == nil {
		p := s.Producer
		if p.Partitions == 0 {
			p.Partitions = parts
		}
		if p.SASL == nil {
			p.SASL = s.SASL
		}
		if p.TLS == nil {
			p.TLS = s.TLS
		}
		produce = func(ctx context.Context, addr, topic string, values []string) error {
			return Produce(ctx, addr, topic, p, values)
		}
	}
	perr := produce(ctx, c.Addr(), s.Topic, res.Values)

	if capt != nil {
		res.Stats, err = capt.Stop(5 * time.Second)
		if err != nil {
			return res, errors.Join(perr, err)
		}
	}
	res.Events = c.Events()
	if perr != nil {
		return res, fmt.Errorf("kafkatest: scenario %s: %w", s.Name, perr)
	}
	res.Log, err = readBack(ctx, c.Addr(), s.Topic, s.SASL, s.TLS)
	if err != nil {
		return res, fmt.Errorf("kafkatest: scenario %s: %w", s.Name, err)
	}
	return res, nil
}

// Answered returns the faults of the run whose response (or close) went
// out, in order: not those whose connection closed first (Event.Answered).
func (r *Result) Answered() []Event {
	var out []Event
	for _, e := range r.Events {
		if !e.Answered.IsZero() {
			out = append(out, e)
		}
	}
	return out
}
