package kafkatest

import (
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is a one-broker kfake cluster on 127.0.0.1 whose connections are
// wrapped to apply Faults to produce responses.
type Cluster struct {
	kf   *kfake.Cluster
	addr string
	port int

	mu       sync.Mutex
	faults   []Fault
	faulted  []int // per fault, requests answered so far
	gen      int   // bumped by SetFaults, so connections restart their counts
	events   []Event
	topicIDs map[[16]byte]string
	legacy   bool // advertise Produce and Fetch from v0
	tls      *tls.Config
}

// NewCluster starts a one-broker kfake cluster on a free port of 127.0.0.1
// with the given faults; opts are passed to kfake first (e.g. kfake.SeedTopics),
// so the harness's own NumBrokers and ListenFn win.
func NewCluster(faults []Fault, opts ...kfake.Opt) (*Cluster, error) {
	c := &Cluster{topicIDs: make(map[[16]byte]string)}
	if err := c.SetFaults(faults...); err != nil {
		return nil, err
	}
	opts = append(opts[:len(opts):len(opts)], kfake.NumBrokers(1), kfake.ListenFn(c.listen))
	kf, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: start kfake: %w", err)
	}
	addrs := kf.ListenAddrs()
	if len(addrs) != 1 {
		kf.Close()
		return nil, fmt.Errorf("kafkatest: kfake listens on %d addresses, want 1", len(addrs))
	}
	_, port, err := net.SplitHostPort(addrs[0])
	if err != nil {
		kf.Close()
		return nil, fmt.Errorf("kafkatest: kfake address %q: %w", addrs[0], err)
	}
	c.port, err = strconv.Atoi(port)
	if err != nil {
		kf.Close()
		return nil, fmt.Errorf("kafkatest: kfake port %q: %w", port, err)
	}
	c.kf, c.addr = kf, addrs[0]
	return c, nil
}

// SetFaults replaces the cluster's faults and resets their counts; requests
// already read keep the decision made when they arrived.
func (c *Cluster) SetFaults(faults ...Fault) error {
	for _, f := range faults {
		if err := f.validate(); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append([]Fault(nil), faults...)
	c.faulted = make([]int, len(faults))
	c.gen++
	return nil
}

// SetLegacyVersions makes the broker's ApiVersions responses advertise
// Produce and Fetch from version 0, as Kafka brokers before 4.0 (KIP-896)
// did, and SaslHandshake from version 0 (which librdkafka 2.0.2 needs to
// authenticate; it then sends v1), while kfake still serves only its own
// versions. librdkafka before
// 2.8 (Debian's kcat has 2.0.2) sends gzip, snappy and lz4 batches
// uncompressed to a broker whose Produce starts at v3 ("Broker does not
// support compression type gzip: not compressing batch", librdkafka issue
// #4956); with this it compresses them.
func (c *Cluster) SetLegacyVersions(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.legacy = on
}

func (c *Cluster) legacyVersions() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacy
}

// Addr is the broker's host:port.
func (c *Cluster) Addr() string { return c.addr }

// Port is the broker's port.
func (c *Cluster) Port() int { return c.port }

// Events returns a copy of the faults applied so far, in the order they were
// answered.
func (c *Cluster) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// Close shuts the cluster down; held responses are released as their
// connections close.
func (c *Cluster) Close() { c.kf.Close() }

func (c *Cluster) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &listener{Listener: ln, c: c}, nil
}

type listener struct {
	net.Listener
	c *Cluster
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if cfg := l.c.tlsConfig(); cfg != nil {
		// TLS ends here, before the faults: they read plaintext.
		nc = tls.Server(nc, cfg)
	}
	return newConn(nc, l.c), nil
}

// SetTLS makes the connections accepted from now on speak TLS with cfg
// (nil: plaintext); see TLS.
func (c *Cluster) SetTLS(cfg *tls.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tls = cfg
}

func (c *Cluster) tlsConfig() *tls.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tls
}

// faultCounts is one connection's count of the produce requests each fault
// matched, for the fault generation gen.
type faultCounts struct {
	gen    int
	counts []int
}

// decide picks the fault for one produce request on a connection.
func (c *Cluster) decide(req *kmsg.ProduceRequest, fc *faultCounts) (Fault, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fc.gen != c.gen || len(fc.counts) != len(c.faults) {
		fc.gen, fc.counts = c.gen, make([]int, len(c.faults))
	}
	for i, f := range c.faults {
		if !c.carries(req, f.Topic) {
			continue
		}
		fc.counts[i]++
		every := max(f.Every, 1)
		if fc.counts[i]%every != 0 || c.faulted[i] >= f.Max {
			continue
		}
		c.faulted[i]++
		return f, true
	}
	return Fault{}, false
}

func (c *Cluster) carries(req *kmsg.ProduceRequest, topic string) bool {
	if topic == "" {
		return true
	}
	for _, t := range req.Topics {
		if t.Topic == topic || c.topicIDs[t.TopicID] == topic {
			return true
		}
	}
	return false
}

// partitions names a produce request's partitions as topic/partition.
func (c *Cluster) partitions(req *kmsg.ProduceRequest) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, t := range req.Topics {
		name := t.Topic
		if name == "" {
			if n, ok := c.topicIDs[t.TopicID]; ok {
				name = n
			} else {
				name = hex.EncodeToString(t.TopicID[:])
			}
		}
		for _, p := range t.Partitions {
			out = append(out, name+"/"+strconv.Itoa(int(p.Partition)))
		}
	}
	return out
}

func (c *Cluster) learnTopics(resp *kmsg.MetadataResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range resp.Topics {
		if t.Topic != nil && t.TopicID != ([16]byte{}) {
			c.topicIDs[t.TopicID] = *t.Topic
		}
	}
}

func (c *Cluster) record(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}
