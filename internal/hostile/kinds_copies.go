package hostile

import (
	"io"
	"time"
)

// The kinds of the correctness rows (q to v): one request seen
// twice, two clusters, and runs cut short. None may give a false finding.

// legs is one TCP stream seen twice: [0] nearer the client (the proxy's
// client leg, the container's side of NAT), [1] nearer the broker.
type legs [2]*conn

// mirror sends frame from side dir on both legs: the leg nearer the
// sender first, the other lag later. Frames fit one segment.
func (g *gen) mirror(l legs, dir int, frame []byte, lag func() time.Duration) {
	first, second := l[0], l[1]
	if dir == toClient {
		first, second = l[1], l[0]
	}
	g.sendBytes(first, dir, frame, false)
	g.wait(lag())
	g.sendBytes(second, dir, frame, false)
}

// mirrored writes exchanges answered batches on both legs and one canary
// (a batch re-sent as the same bytes under a new correlation ID) carried
// on both too; every request is echoed.
func (g *gen) mirrored(l legs, exchanges int64, lag func() time.Duration) {
	id := "mirrored"
	p := &producer{clientID: &id, version: 7, acks: -1, corr: 1}
	var uniq uint64
	send := func(batch []byte, errCode int16) {
		h := p.next("orders", 0)
		corr := h.corr
		g.req = produceBytes(g.req[:0], h, batch)
		g.mirror(l, toBroker, g.req, lag)
		g.wait(300 * time.Microsecond)
		g.resp = produceResponse(g.resp[:0], p.version, corr, "orders", 0, errCode, p.offset)
		g.mirror(l, toClient, g.resp, lag)
		p.offset += 3
		g.t.Requests += 2
		g.t.Echoed++
		g.wait(2 * time.Millisecond)
	}
	for i := int64(0); i < exchanges && g.err == nil; i++ {
		send(g.smallBatch(3, 200, &uniq), errNone)
		g.t.Batches++
	}
	b := g.smallBatch(3, 200, &uniq)
	send(b, errRequestTimedOut)
	send(b, errNone)
	g.t.Batches++
	g.t.Resends++
	g.t.Findings++
	g.t.Duplicated++
	g.t.Topics, g.t.ClientIDs = 1, 1
}

// q: a TCP proxy on the capture host (10.0.0.9) between a client and a
// broker: the legs carry the same bytes 60 to 100 us apart.
func writeProxy(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	g.step = int64(time.Microsecond)
	proxy := ipv4(10, 0, 0, 9)
	l := legs{g.newConn(client1, proxy, 41000, 9092), g.newConn(proxy, broker1, 52000, 9092)}
	g.handshake(l[0], 7)
	g.handshake(l[1], 7)
	lag := func() time.Duration { return time.Duration(59+g.rng.IntN(41)) * time.Microsecond }
	g.mirrored(l, scaled(100, scale), lag)
	g.fin(l[0])
	g.fin(l[1])
	return g.close()
}

// r: `tcpdump -i any` on a Docker host: the container's connection on its
// veth (interface 7) and, masqueraded, on eth0 (interface 2), the same
// segments 10 to 30 us apart.
func writeDockerNAT(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, fileFormat{link: linkSLL2, snap: 262144}, t)
	g.step = int64(time.Microsecond)
	container, host := ipv4(172, 17, 0, 2), ipv4(192, 168, 1, 10)
	inner := g.newConn(container, broker1, 40100, 9092)
	outer := newConn(host, broker1, 40100, 9092, inner.next[0], inner.next[1])
	t.Connections++
	inner.ifIndex = [2]uint32{7, 7}
	inner.outgoing = [2]bool{false, true} // from the container: in; to it: out
	outer.ifIndex = [2]uint32{2, 2}
	outer.outgoing = [2]bool{true, false}
	l := legs{inner, outer}
	lag := func() time.Duration { return time.Duration(9+g.rng.IntN(21)) * time.Microsecond }
	// The handshake, mirrored too.
	opts := synOpts(7)
	for _, c := range l {
		g.segment(c, toBroker, c.next[0], flagSYN, opts, nil, 0)
		c.next[0]++
	}
	for _, c := range []*conn{outer, inner} {
		g.segment(c, toClient, c.next[1], flagSYN|flagACK, opts, nil, 0)
		c.next[1]++
	}
	for _, c := range l {
		g.segment(c, toBroker, c.next[0], flagACK, nil, nil, 0)
	}
	g.mirrored(l, scaled(100, scale), lag)
	return g.close()
}

// s: ordinary traffic over about 3 s with 3 re-sends, long enough that a
// copy of the file shifted by 1 s overlaps it.
func writeTwice(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	var uniq uint64
	g.ordinary(3, int(scaled(60, scale)), 3, 50*time.Millisecond, &uniq)
	return g.close()
}

// v: ordinary traffic with 2 re-sends, all answered.
func writeInterrupt(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	var uniq uint64
	g.ordinary(2, int(scaled(40, scale)), 2, time.Millisecond, &uniq)
	return g.close()
}

// cluster is one broker of its own cluster as a Metadata response names it.
type cluster struct {
	ip   [4]byte
	host string
	id   string
}

var (
	alpha = cluster{ip: broker1, host: "10.0.0.2", id: "MkU3OEVBNTcwNTJENDM2Qk"}
	beta  = cluster{ip: broker2, host: "10.0.1.2", id: "ZmYxYjQ4ZDctOTM3ZS00Mz"}
)

// clusterProducer opens a connection to c's broker and reads Metadata
// there, so that the capture says which cluster the broker is of.
func (g *gen) clusterProducer(c cluster, cport uint16, clientID string) *producer {
	p := g.newProducer(client1, c.ip, cport, 7, clientID)
	req, resp := metadataExchange(p.clientID, p.corr, c.id, "orders", []metadataBroker{{nodeID: 1, host: c.host, port: 9092}})
	p.corr++
	g.sendBytes(p.cn, toBroker, req, false)
	g.wait(200 * time.Microsecond)
	g.sendBytes(p.cn, toClient, resp, false)
	return p
}

// t: two clusters, each handing the same client's producer ID 0 epoch 0;
// both get the same sequences of batches of other bytes. Then one real
// re-send in the first cluster by a producer that is not idempotent.
func writeTwoClusters(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	pa := g.clusterProducer(alpha, 40000, "app")
	pb := g.clusterProducer(beta, 40001, "app")
	var uniq uint64
	for i := int64(0); i < scaled(20, scale) && g.err == nil; i++ {
		for _, p := range []*producer{pa, pb} {
			g.recs = g.recs[:0]
			for r := range int32(4) {
				uniq++
				g.recs = g.rw.append(g.recs, r, 0, nil, g.value(200, uniq))
			}
			h := batchHead{producerID: 0, epoch: 0, seq: int32(4 * i), numRecords: 4, lastDelta: 3,
				firstTS: g.now / int64(time.Millisecond), maxTS: g.now / int64(time.Millisecond)}
			g.exchange(p, "orders", 0, h.batch(g.recs), 4)
		}
	}
	pc := g.clusterProducer(alpha, 40002, "app")
	g.canary(pc, "orders", 1, &uniq)
	for _, p := range []*producer{pa, pb, pc} {
		g.fin(p.cn)
	}
	t.Clusters, t.Topics, t.ClientIDs = 2, 1, 1
	return g.close()
}

// u: one producer that is not idempotent writes every batch's records to
// both clusters: half the batches as the same bytes, half rebuilt with
// another timestamp. Then, in the first cluster only, the application
// writes two records twice in batches of other bytes: one record finding
// (record_duplicate) with --app-duplicates.
func writeDualWrite(w io.Writer, scale float64, t *Truth) error {
	g := newGen(w, ethernet, t)
	pa := g.clusterProducer(alpha, 40000, "dual")
	pb := g.clusterProducer(beta, 40001, "dual")
	var uniq uint64
	records := func(n int32) []byte {
		var out []byte
		for r := range n {
			uniq++
			out = g.rw.append(out, r, 0, nil, g.value(200, uniq))
		}
		return out
	}
	for i := int64(0); i < scaled(20, scale) && g.err == nil; i++ {
		recs := records(3)
		ts := g.now / int64(time.Millisecond)
		g.exchange(pa, "orders", 0, notIdempotent(3, ts).batch(recs), 3)
		if i%2 == 1 {
			ts += 7
		}
		g.exchange(pb, "orders", 0, notIdempotent(3, ts).batch(recs), 3)
	}
	recs := records(2)
	ts := g.now / int64(time.Millisecond)
	g.exchange(pa, "orders", 0, notIdempotent(2, ts).batch(recs), 2)
	g.wait(50 * time.Millisecond)
	g.exchange(pa, "orders", 0, notIdempotent(2, ts+50).batch(recs), 2)
	t.RecordFindings = 1
	g.fin(pa.cn)
	g.fin(pb.cn)
	t.Clusters, t.Topics, t.ClientIDs = 2, 1, 1
	return g.close()
}
