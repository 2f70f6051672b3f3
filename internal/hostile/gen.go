package hostile

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"time"
)

// gen is one capture being written: the packet writer, the one PCG source
// every choice is drawn from, and scratch buffers reused by every frame.
type gen struct {
	*capWriter
	rng     *rand.Rand
	t       *Truth
	rw      recordWriter
	scratch []byte // for passes that only read a source
	req     []byte // request frame being built
	resp    []byte // response frame being built
	val     []byte // record value being built
	pool    []byte // random bytes values are cut from
	recs    []byte // records being built
}

// newGen starts a capture of format f on w; the seed is the kind's, so
// every kind has its own sequence of draws.
func newGen(w io.Writer, f fileFormat, t *Truth) *gen {
	return &gen{
		capWriter: newCapWriter(w, f, t),
		rng:       rand.New(rand.NewPCG(uint64(t.Kind), 0x6b647570636170)),
		t:         t,
		scratch:   make([]byte, scanChunk),
	}
}

// ethernet is the format of most kinds: a classic pcap of Ethernet frames,
// snap length 262144 as tcpdump writes.
var ethernet = fileFormat{link: linkEthernet, snap: 262144}

// Addresses used throughout: brokers in 10.0.0.0/24, clients elsewhere.
var (
	broker1 = ipv4(10, 0, 0, 2)
	broker2 = ipv4(10, 0, 1, 2)
	client1 = ipv4(10, 1, 0, 5)
)

// clientIP is the i-th of up to 2^24 distinct client addresses in 10/8,
// from 10.1.0.1 on.
func clientIP(i int64) [4]byte {
	i += 1<<16 + 1
	return ipv4(10, byte(i>>16), byte(i>>8), byte(i))
}

// newConn makes a connection to a broker with random initial sequence
// numbers and counts it.
func (g *gen) newConn(cli, brk [4]byte, cport, bport uint16) *conn {
	g.t.Connections++
	return newConn(cli, brk, cport, bport, g.rng.Uint32(), g.rng.Uint32())
}

// producer is a client on one connection: its request settings, its next
// correlation ID, and the next offset its broker answers with.
type producer struct {
	cn       *conn
	clientID *string
	version  int16
	acks     int16
	corr     int32
	offset   int64
}

// next is the head of the producer's next request, which takes its next
// correlation ID.
func (p *producer) next(topic string, partition int32) produceHead {
	h := produceHead{version: p.version, clientID: p.clientID, corr: p.corr, acks: p.acks,
		timeoutMs: 30000, topic: topic, partition: partition}
	p.corr++
	return h
}

// newProducer opens a connection (handshake included) for a producer of
// version v that is not idempotent, acks=all.
func (g *gen) newProducer(cli, brk [4]byte, cport uint16, v int16, clientID string) *producer {
	cn := g.newConn(cli, brk, cport, 9092)
	g.handshake(cn, 7)
	return &producer{cn: cn, clientID: &clientID, version: v, acks: -1, corr: 1}
}

// produce sends one request carrying batch (in memory) and returns its
// correlation ID.
func (g *gen) produce(p *producer, topic string, partition int32, batch []byte) int32 {
	h := p.next(topic, partition)
	g.req = produceBytes(g.req[:0], h, batch)
	g.t.Requests++
	g.t.Batches++
	g.sendBytes(p.cn, toBroker, g.req, false)
	return h.corr
}

// answer writes the broker's response to request corr: errCode, and base
// offset base (-1: none).
func (g *gen) answer(p *producer, corr int32, topic string, partition int32, errCode int16, base int64) {
	g.resp = produceResponse(g.resp[:0], p.version, corr, topic, partition, errCode, base)
	g.sendBytes(p.cn, toClient, g.resp, false)
}

// exchange is produce then a success answer 0.3 ms later at the
// producer's next offset.
func (g *gen) exchange(p *producer, topic string, partition int32, batch []byte, records int64) {
	corr := g.produce(p, topic, partition, batch)
	g.wait(300 * time.Microsecond)
	g.answer(p, corr, topic, partition, errNone, p.offset)
	p.offset += records
}

// poolBytes is the size of the random bytes values are cut from.
const poolBytes = 64 << 10

// value returns n bytes whose first 8 are a counter unique in the capture
// and the rest random, cut from a pool at a random offset (valid until the
// next call).
func (g *gen) value(n int, unique uint64) []byte {
	if g.pool == nil {
		g.pool = make([]byte, 2*poolBytes)
		for i := 0; i < len(g.pool); i += 8 {
			binary.LittleEndian.PutUint64(g.pool[i:], g.rng.Uint64())
		}
	}
	if cap(g.val) < n {
		g.val = make([]byte, n)
	}
	v := g.val[:n]
	for i := 0; i < n; {
		i += copy(v[i:], g.pool[g.rng.IntN(poolBytes):][:poolBytes])
	}
	if n >= 8 {
		binary.BigEndian.PutUint64(v, unique)
	}
	return v
}

// smallBatch is a batch of a producer that is not idempotent: n records of
// size bytes of random value each, the first 8 of each unique (from uniq).
func (g *gen) smallBatch(n int32, size int, uniq *uint64) []byte {
	g.recs = g.recs[:0]
	for i := range n {
		*uniq++
		g.recs = g.rw.append(g.recs, i, 0, nil, g.value(size, *uniq))
	}
	ts := (g.now / int64(time.Millisecond))
	return notIdempotent(n, ts).batch(g.recs)
}

// canary sends one batch twice as the same bytes: the first attempt
// answered REQUEST_TIMED_OUT after the append, the second (a new
// correlation ID) NONE at the next offset. A correct analysis reports it as
// one finding, verdict duplicated; kinds whose capture hides it (snap
// length) take it out of Findings.
func (g *gen) canary(p *producer, topic string, partition int32, uniq *uint64) {
	b := g.smallBatch(3, 200, uniq)
	c1 := g.produce(p, topic, partition, b)
	g.wait(time.Millisecond)
	g.answer(p, c1, topic, partition, errRequestTimedOut, p.offset)
	p.offset += 3
	g.wait(5 * time.Millisecond)
	g.t.Batches-- // the same batch again
	c2 := g.produce(p, topic, partition, b)
	g.wait(time.Millisecond)
	g.answer(p, c2, topic, partition, errNone, p.offset)
	p.offset += 3
	g.t.Resends++
	g.t.Findings++
	g.t.Duplicated++
}

// ordinary writes conns producers, each with exchanges answered batches of
// 4 records of 1000 bytes and resends canaries spread among them, then
// closes them; dt spaces the exchanges of one producer.
func (g *gen) ordinary(conns, exchanges, resends int, dt time.Duration, uniq *uint64) {
	ps := make([]*producer, conns)
	for i := range ps {
		ps[i] = g.newProducer(clientIP(int64(i)), broker1, uint16(40000+i), int16(3+3*(i%3)), "ordinary")
	}
	every := max(1, exchanges/max(1, resends))
	left := resends
	for e := range exchanges {
		for i, p := range ps {
			topic := "orders"
			if i%2 == 1 {
				topic = "payments"
			}
			part := int32(i)
			if e%every == every-1 && left > 0 && i == (e/every)%conns {
				g.canary(p, topic, part, uniq)
				left--
				continue
			}
			g.exchange(p, topic, part, g.smallBatch(4, 1000, uniq), 4)
		}
		g.wait(dt)
	}
	for _, p := range ps {
		g.fin(p.cn)
	}
	g.t.ClientIDs = 1
	g.t.Topics = 2
}
