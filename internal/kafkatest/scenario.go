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

// Scenario is one run: a fresh cluster of Brokers brokers with Faults, a
// topic of Partitions partitions, Records distinct values written by a
// producer (while LeaderMoves move the partitions' leaders), the traffic
// optionally captured, then the log read back.
type Scenario struct {
	Name       string // names the values "rec-<Name>-<i>"
	Topic      string
	Partitions int32
	Records    int
	Faults     []Fault
	// Brokers is the cluster's size; 0 or 1 is one broker. The producer is
	// given node 0's address and finds the others in Metadata.
	Brokers int
	// LeaderMoves, when set, moves every partition's leader while the
	// producer runs (it needs Brokers >= 2); Result.Moves lists the moves.
	LeaderMoves *LeaderMoves
	// Proxy puts the harness's proxy in front of every broker
	// (ClusterConfig.Proxy); an AnswerThenReset fault turns it on.
	Proxy bool
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
	Port   int      // the first broker's (node 0's) real port
	Ports  []int    // every broker's real port, by node ID: what was captured
	// Addrs are the brokers' addresses as clients dialled them, by node ID:
	// the proxy's when Proxied.
	Addrs []string
	// Proxied says the clients went through the proxy: the capture then
	// shows the proxy's legs, and the "client" of each captured connection
	// is the proxy's ephemeral address (127.0.0.1:port), not the producer's;
	// Legs maps each to the real client.
	Proxied bool
	Legs    []ProxyLeg
	// Exchanges are every produce request the brokers answered (or were due
	// to), faulted or not, e.g. the NOT_LEADER_OR_FOLLOWER answers after a
	// leader move.
	Exchanges []Exchange
	Moves     []Move // the leader moves made
	Pcap      string // the capture file, "" if not captured
	Stats     CaptureStats
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
	if s.LeaderMoves != nil {
		if err := s.LeaderMoves.validate(max(s.Brokers, 1)); err != nil {
			return nil, err
		}
	}
	if s.TLS != nil && needsProxy(s.Faults) {
		return nil, fmt.Errorf("kafkatest: scenario %s: %s needs plaintext, not TLS", s.Name, AnswerThenReset)
	}
	c, err := NewClusterWith(ClusterConfig{Brokers: s.Brokers, Faults: s.Faults, Proxy: s.Proxy}, kopts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetLegacyVersions(s.LegacyVersions)
	if s.TLS != nil {
		c.SetTLS(s.TLS.server())
	}

	res := &Result{Values: Values(s.Name, s.Records), Port: c.Port(), Ports: c.Ports(), Addrs: c.Addrs(), Proxied: c.Proxied()}
	var capt *Capture
	if pcap != "" {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		capt, err = StartCapturePorts(sctx, pcap, c.Ports()...)
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
	var moved chan error
	stopMoves := func() {}
	if s.LeaderMoves != nil {
		mctx, cancel := context.WithCancel(ctx)
		moved, stopMoves = make(chan error, 1), cancel
		go func() { moved <- c.MoveLeaders(mctx, s.Topic, parts, *s.LeaderMoves) }()
	}
	perr := produce(ctx, c.Addr(), s.Topic, res.Values)
	stopMoves()
	if moved != nil {
		if err := <-moved; err != nil {
			perr = errors.Join(perr, err)
		}
	}

	if capt != nil {
		res.Stats, err = capt.Stop(5 * time.Second)
		if err != nil {
			res.Events, res.Exchanges, res.Moves, res.Legs = c.Events(), c.Exchanges(), c.Moves(), c.Legs()
			return res, errors.Join(perr, err)
		}
	}
	res.Events, res.Exchanges, res.Moves, res.Legs = c.Events(), c.Exchanges(), c.Moves(), c.Legs()
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
