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

// Cluster is a kfake cluster of one or more brokers on 127.0.0.1 whose
// connections are wrapped to apply Faults to produce responses, optionally
// behind an in-harness TCP proxy (ClusterConfig.Proxy).
type Cluster struct {
	kf      *kfake.Cluster
	proxied bool

	mu        sync.Mutex
	brokers   []*brokerInfo // by node ID (kfake numbers its brokers 0..n-1)
	faults    []Fault
	faulted   []int // per fault, requests answered so far
	gen       int   // bumped by SetFaults, so connections restart their counts
	events    []Event
	exchanges []Exchange
	moves     []Move
	legs      []ProxyLeg
	legIdx    map[string]int   // ProxyLeg.Leg -> index in legs
	doomed    map[string]int32 // proxy leg -> correlation ID of an answer the proxy must drop
	topicIDs  map[[16]byte]string
	legacy    bool // advertise Produce and Fetch from v0
	tls       *tls.Config
}

// ClusterConfig is the shape of a Cluster.
type ClusterConfig struct {
	// Brokers is how many brokers the cluster runs (kfake.NumBrokers); 0
	// or 1 runs one.
	Brokers int
	// Faults are applied on every broker's connections, counted per
	// connection and bounded (Fault.Max) in the whole cluster.
	Faults []Fault
	// Proxy puts an in-harness TCP proxy (proxy.go) in front of every
	// broker: kfake advertises the proxy's address in Metadata (the
	// harness's listener reports it as its Addr), clients dial it, and the
	// proxy forwards each client connection on a connection of its own (a
	// leg) to the broker's real port, which is what Ports names and a
	// capture sees. An AnswerThenReset fault turns it on.
	Proxy bool
}

// brokerInfo is one broker's addresses.
type brokerInfo struct {
	node   int32
	addr   string // the real, wrapped listener's host:port
	port   int
	client string // what clients dial: the proxy's host:port, or addr
}

// NewCluster starts a one-broker kfake cluster on a free port of 127.0.0.1
// with the given faults; opts are passed to kfake first (e.g. kfake.SeedTopics),
// so the harness's own NumBrokers and ListenFn win. It is NewClusterWith
// with ClusterConfig{Faults: faults}.
func NewCluster(faults []Fault, opts ...kfake.Opt) (*Cluster, error) {
	return NewClusterWith(ClusterConfig{Faults: faults}, opts...)
}

// NewClusterWith starts a kfake cluster of cfg.Brokers brokers, each on a
// free port of 127.0.0.1, every broker's listener wrapped with cfg.Faults
// and, with cfg.Proxy (or an AnswerThenReset fault), behind a proxy. opts
// are passed to kfake first; the harness's NumBrokers and ListenFn win.
func NewClusterWith(cfg ClusterConfig, opts ...kfake.Opt) (*Cluster, error) {
	n := max(cfg.Brokers, 1)
	c := &Cluster{
		proxied:  cfg.Proxy || needsProxy(cfg.Faults),
		legIdx:   make(map[string]int),
		doomed:   make(map[string]int32),
		topicIDs: make(map[[16]byte]string),
	}
	if err := c.SetFaults(cfg.Faults...); err != nil {
		return nil, err
	}
	opts = append(opts[:len(opts):len(opts)], kfake.NumBrokers(n), kfake.ListenFn(c.listen))
	kf, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: start kfake: %w", err)
	}
	if got := len(kf.ListenAddrs()); got != n || len(c.brokers) != n {
		kf.Close()
		return nil, fmt.Errorf("kafkatest: kfake listens on %d addresses (%d wrapped), want %d", got, len(c.brokers), n)
	}
	c.kf = kf
	return c, nil
}

// needsProxy says whether one of faults needs the proxy.
func needsProxy(faults []Fault) bool {
	for _, f := range faults {
		if f.Action == AnswerThenReset {
			return true
		}
	}
	return false
}

// SetFaults replaces the cluster's faults and resets their counts; requests
// already read keep the decision made when they arrived.
func (c *Cluster) SetFaults(faults ...Fault) error {
	for _, f := range faults {
		if err := f.validate(); err != nil {
			return err
		}
		if f.Action == AnswerThenReset && !c.proxied {
			return fmt.Errorf("kafkatest: fault %s needs the cluster's proxy (ClusterConfig.Proxy)", f.Action)
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

// Addr is the first broker's (node 0's) host:port as clients dial it: the
// proxy's with the proxy, else the broker's own.
func (c *Cluster) Addr() string { return c.brokers[0].client }

// Port is the first broker's (node 0's) real port: the one a capture
// watches, the broker's own even with the proxy.
func (c *Cluster) Port() int { return c.brokers[0].port }

// Addrs are every broker's host:port as clients dial it (the proxy's with
// the proxy), by node ID.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.client
	}
	return out
}

// Ports are every broker's real port, by node ID: what StartCapture
// watches.
func (c *Cluster) Ports() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.port
	}
	return out
}

// Proxied says whether clients reach the brokers through the proxy.
func (c *Cluster) Proxied() bool { return c.proxied }

// KFake is the kfake cluster underneath, for admin calls of a test's own
// (a leader move made there is not in Moves).
func (c *Cluster) KFake() *kfake.Cluster { return c.kf }

// Events returns a copy of the faults applied so far, in the order they were
// answered.
func (c *Cluster) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// Exchanges returns a copy of the produce requests (acks != 0) answered or
// faulted so far, in the order their answers were due.
func (c *Cluster) Exchanges() []Exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Exchange(nil), c.exchanges...)
}

// Legs returns a copy of the proxy's connections so far, in the order they
// were opened (none without the proxy).
func (c *Cluster) Legs() []ProxyLeg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ProxyLeg(nil), c.legs...)
}

// Close shuts the cluster down; held responses are released as their
// connections close, and the proxy's connections are reset.
func (c *Cluster) Close() { c.kf.Close() }

// listen is kfake's ListenFn: it is called once per broker, in node order.
func (c *Cluster) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("kafkatest: listener address %q: %w", addr, err)
	}
	b := &brokerInfo{addr: addr, client: addr}
	if b.port, err = strconv.Atoi(port); err != nil {
		ln.Close()
		return nil, fmt.Errorf("kafkatest: listener port %q: %w", port, err)
	}
	c.mu.Lock()
	b.node = int32(len(c.brokers))
	c.mu.Unlock()
	l := &listener{Listener: ln, c: c, node: b.node}
	if c.proxied {
		p, err := newProxy(c, b.node, addr)
		if err != nil {
			ln.Close()
			return nil, err
		}
		l.proxy = p
		b.client = p.ln.Addr().String()
	}
	c.mu.Lock()
	c.brokers = append(c.brokers, b)
	c.mu.Unlock()
	return l, nil
}

// listener is one broker's wrapped listener. With the proxy, its Addr is
// the proxy's, which kfake then advertises, and closing it closes the
// proxy.
type listener struct {
	net.Listener
	c     *Cluster
	node  int32
	proxy *proxy
}

func (l *listener) Addr() net.Addr {
	if l.proxy != nil {
		return l.proxy.ln.Addr()
	}
	return l.Listener.Addr()
}

func (l *listener) Close() error {
	err := l.Listener.Close()
	if l.proxy != nil {
		l.proxy.close()
	}
	return err
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	raw, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("kafkatest: accepted a %T, want *net.TCPConn", nc)
	}
	var wrapped net.Conn = raw
	if cfg := l.c.tlsConfig(); cfg != nil {
		// TLS ends here, before the faults: they read plaintext.
		wrapped = tls.Server(raw, cfg)
	}
	return newConn(raw, wrapped, l.c, l.node), nil
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
		if !c.carries(req, f.Topic) || (f.Action == AnswerThenReset && c.tls != nil) {
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
	var out []string
	for _, t := range req.Topics {
		name := c.topicName(t.Topic, t.TopicID)
		for _, p := range t.Partitions {
			out = append(out, name+"/"+strconv.Itoa(int(p.Partition)))
		}
	}
	return out
}

// topicName is name, or the name a Metadata response gave id, or id in hex.
func (c *Cluster) topicName(name string, id [16]byte) string {
	if name != "" {
		return name
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.topicIDs[id]; ok {
		return n
	}
	return hex.EncodeToString(id[:])
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
	if i, ok := c.legIdx[e.Conn]; ok {
		e.Client = c.legs[i].Client
	}
	c.events = append(c.events, e)
}

func (c *Cluster) recordExchange(x Exchange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.legIdx[x.Conn]; ok {
		x.Client = c.legs[i].Client
	}
	c.exchanges = append(c.exchanges, x)
}
