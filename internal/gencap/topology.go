package gencap

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topics the generator produces to, by name, with their partition counts.
var topics = [...]struct {
	name       string
	partitions int32
}{
	{"orders", 6}, {"payments", 3}, {"clicks", 12}, {"audit-log", 1},
}

// versions are the ProduceRequest versions producers use: RecordBatch from
// v3, zstd from v7, flexible from v9, v11 as recent clients send it.
var versions = [...]int16{3, 7, 9, 11}

// clientFamilies names producers after the clients that send each version.
var clientFamilies = [...]string{"sarama", "rdkafka", "producer", "kgo"}

// codecOrder spreads codecs over producers.
var codecOrder = [...]Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// timeouts are the producers' request.timeout.ms values, sent in requests.
var timeouts = [...]int32{500, 1000, 2000, 3000}

// partition is one topic-partition and its log end offset at its leader.
type partition struct {
	topic  string
	id     int32
	index  int // position in generator.parts
	leader int // broker index
	leo    int64
}

// producer is one client: its settings outlive its connections (a closed
// connection is replaced by a new one of the same producer).
type producer struct {
	index         int
	clientID      string
	format        *kmsg.RequestFormatter
	host          endpoint // port unset
	broker        *endpoint
	parts         []*partition
	version       int16
	acks          int16
	timeoutMillis int32
	codec         Codec
	withKeys      bool
	idempotent    bool
	producerID    int64
	producerEpoch int16
	sequences     []int32 // next base sequence by partition index
}

// conn is one TCP connection of a producer.
type conn struct {
	p       *producer
	index   int // creation order; decides the client port
	client  endpoint
	corr    int32
	cSeq    uint32 // next sequence number the client sends
	bSeq    uint32 // next sequence number the broker sends
	cIPID   uint16
	bIPID   uint16
	next    int64 // time of the next step, µs
	opened  bool
	closing bool
	tls     *tlsSession // Config.TLS: the connection's TLS, once opened
}

func (c *conn) nextCorr() int32 {
	id := c.corr
	c.corr++
	return id
}

// ipv4 returns a.b.c.d.
func ipv4(a, b, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b, c, d}) }

// newTopology creates the partitions and brokers.
func (g *generator) newTopology() {
	for b := 0; b < g.cfg.Brokers; b++ {
		e := &endpoint{port: 9092, mac: make(net.HardwareAddr, 6)}
		if g.loopback() {
			e.addr = ipv4(127, 0, 1, byte(1+b))
		} else {
			e.addr = ipv4(10, 0, 1, byte(1+b))
			copy(e.mac, []byte{0x02, 0, 0, 0, 1, byte(1 + b)})
		}
		g.brokers = append(g.brokers, e)
	}
	g.byBroker = make([][]*partition, g.cfg.Brokers)
	for ti, t := range topics {
		for p := int32(0); p < t.partitions; p++ {
			part := &partition{topic: t.name, id: p, index: len(g.parts), leader: (ti + int(p)) % g.cfg.Brokers}
			g.parts = append(g.parts, part)
			g.byBroker[part.leader] = append(g.byBroker[part.leader], part)
		}
	}
	for b, parts := range g.byBroker {
		if len(parts) > 0 {
			g.leaders = append(g.leaders, b)
		}
	}
}

// newProducer creates the i-th producer. Producers cycle through four
// classes (idempotent acks=all; acks=all; acks=1; acks=0), the first two
// only with Config.AcksAll, and, offset by
// the class, through versions, codecs and timeouts, so that every mix
// appears with a few connections.
func (g *generator) newProducer(i int) *producer {
	vi := (i + i/4) % len(versions)
	p := &producer{
		index:         i,
		clientID:      fmt.Sprintf("%s-%d", clientFamilies[vi], i),
		version:       versions[vi],
		timeoutMillis: timeouts[(i/4)%len(timeouts)],
		codec:         codecOrder[(i*3+i/5)%len(codecOrder)],
		withKeys:      i%3 == 0,
		producerID:    -1,
		producerEpoch: -1,
		sequences:     make([]int32, len(g.parts)),
	}
	if p.codec == CodecZstd && p.version < 7 {
		p.codec = CodecLZ4
	}
	p.format = kmsg.NewRequestFormatter(kmsg.FormatterClientID(p.clientID))
	class := i % 4
	if g.cfg.AcksAll {
		class = i % 2
	}
	switch class {
	case 0:
		p.acks, p.idempotent = -1, true
		p.producerID, p.producerEpoch = g.nextProducerID, 0
		g.nextProducerID++
	case 1:
		p.acks = -1
	case 2:
		p.acks = 1
	case 3:
		p.acks = 0
	}
	b := g.leaders[i%len(g.leaders)]
	p.broker = g.brokers[b]
	p.parts = g.byBroker[b]
	host := byte(10 + i%64)
	p.host.mac = make(net.HardwareAddr, 6)
	if g.loopback() {
		p.host.addr = ipv4(127, 0, 0, host)
	} else {
		p.host.addr = ipv4(10, 0, 0, host)
		copy(p.host.mac, []byte{0x02, 0, 0, 0, 0, host})
	}
	return p
}

// newConn opens (schedules) a new connection of p at time t.
func (g *generator) newConn(p *producer, t int64) *conn {
	c := &conn{p: p, index: g.connsCreated, client: p.host, next: t}
	c.client.port = uint16(32768 + g.connsCreated%28000)
	g.connsCreated++
	return c
}
