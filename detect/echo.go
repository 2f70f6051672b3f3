package detect

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/internal/fifo"
)

// Capture duplicates. One request can reach the capture more than once: a
// TCP proxy on the capture host carries the same bytes on its two legs
// (client to proxy, proxy to broker), `tcpdump -i any` on a Docker or
// Kubernetes host sees one connection before and after NAT, and a capture
// file given twice (or two captures of one link) holds every connection
// twice, up to the clock skew between the copies. Each copy is an Exchange
// of its own connection; they carry the same correlation ID, which a real
// re-send never does on the connection it came from, and the same batch
// bytes.
//
// So an exchange is an echo when an exchange handed to the Detector before
// it, on another connection, had the same correlation ID, client.id,
// number of batches and first batch (topic, partition, CRC and bytes),
// sent within Options.EchoWindow of it and answered alike (the same error
// and base offset for the first batch; through a proxy or NAT, sent before
// the first copy's answer: sameAnswer), unless the two connections are of
// one client IP to one broker address from two client ports: that is a
// client reconnecting, and a client that numbers its requests anew on
// every connection (franz-go, sarama) may re-send there with the
// correlation ID of the first attempt; or of brokers of two clusters the
// capture told apart (decode.Exchange.Cluster): an application writing the
// same records to two clusters, each producer numbering from the start. An echo is no attempt: it is folded
// into the first copy, whose connection, times and response the finding
// keeps (the first copy handed over is the one whose exchange completed
// first: for a proxy, usually the leg nearer the broker), and counted in
// Stats.Echoes with its pair of connections (Stats.EchoLegs); it is not
// counted in Stats.Batches or a topic's counts, matched by records, or
// shown to a profiler (Echo tells a caller before Produce).
//
// The two legs of a proxy or NAT name the client differently (the proxy's
// or the host's address), and a re-send of a batch on a new connection may
// reach the Detector by either leg first: each echo teaches that the
// second copy's client (IP and client.id) and broker address stand for
// the first's, so that later batches of either leg are filed under one
// client (aliases, at most maxAliases).
//
// A copy sent longer than EchoWindow after the first is taken as a
// re-send (an echo that late is no proxy, NAT or clock skew worth the
// name); a copy whose exchange completes more than echoKeep windows after
// the first copy's, or after maxEchoes later exchanges, is too: the
// sightings are bounded.

// DefaultEchoWindow is the default of Options.EchoWindow: a proxy's or a
// NAT's copy follows within a millisecond, and captures of one link given
// together are rarely more than a second apart.
const DefaultEchoWindow = time.Second

const (
	// maxEchoes bounds the exchanges remembered as first copies (about 60
	// bytes each).
	maxEchoes = 1 << 16
	// echoKeep: a first copy is remembered for echoKeep EchoWindows of
	// packet time after its exchange completed, for a copy that completes
	// later (unanswered until its connection closes).
	echoKeep = 10
	// maxAliases bounds the clients and brokers learned as another's copy.
	maxAliases = 1 << 12
	// MaxEchoLegs is the most pairs of connections Stats.EchoLegs names.
	MaxEchoLegs = 4
)

// EchoLeg is a pair of connections that carried copies of the same
// requests (Stats.EchoLegs): First held the copies kept, Second their
// echoes.
type EchoLeg struct {
	FirstClient, FirstBroker   netip.AddrPort
	SecondClient, SecondBroker netip.AddrPort
	// Requests counts the echoes seen on the pair.
	Requests int64
}

// echoSeen is an exchange remembered as the first copy of its request.
type echoSeen struct {
	conn *decode.ConnInfo
	req  int64 // sent, Unix ns
	seen int64 // completed (its response, else its send), Unix ns
	corr int32
	crc  uint32
	// cluster is the exchange's decode.Exchange.Cluster: a copy to
	// another known cluster is a dual write, never an echo.
	cluster string
	// answered: the first batch's answer was captured, at resp, with
	// errorCode and baseOffset; a copy answered otherwise is no echo.
	answered   bool
	errorCode  int16
	baseOffset int64
	resp       int64
}

type echoQueued struct {
	seen int64
	key  uint64
}

// echoState is what a Detector keeps of capture duplicates.
type echoState struct {
	seen    map[uint64]echoSeen
	order   fifo.Queue[echoQueued]
	owners  map[owner]owner
	brokers map[netip.AddrPort]netip.AddrPort
	legs    []EchoLeg
	pairs   [][2]*decode.ConnInfo // the connections of legs
}

// Echo reports whether x is a copy of an exchange already handed to
// Produce (a proxy's other leg, NAT, a capture given twice): Produce will
// fold it into that one. A caller that profiles exchanges asks before
// handing x to Produce, which changes the answer.
func (d *Detector) Echo(x *decode.Exchange) bool {
	if x == nil {
		return false
	}
	_, _, _, ok := d.echoOf(x, unixNano(x.RequestTime))
	return ok
}

// echoOf returns the first copy of x's request, if x is an echo of it,
// and x's echo key when it computed it (keyed), for sighted.
func (d *Detector) echoOf(x *decode.Exchange, req int64) (first echoSeen, key uint64, keyed, ok bool) {
	if d.echoWindow < 0 || x.Conn == nil || len(x.Batches) == 0 || len(d.echo.seen) == 0 {
		return echoSeen{}, 0, false, false
	}
	key = d.echoKey(x)
	e, ok := d.echo.seen[key]
	switch {
	case !ok, e.conn == x.Conn, e.corr != x.CorrelationID, e.crc != x.Batches[0].CRC,
		abs64(req-e.req) > d.echoWindow, reconnect(e.conn, x.Conn),
		e.cluster != "" && x.Cluster != "" && e.cluster != x.Cluster,
		!sameAnswer(&e, x, req):
		return echoSeen{}, key, true, false
	}
	return e, key, true, true
}

// echoSlack is how much later than the first copy's answer a copy on
// other addresses may be sent and still be its echo: the legs' timestamps
// may disagree by that much (two interfaces, a capture re-cut), and no
// client re-sends that fast after reading an answer (it backs off, or
// connects anew first).
const echoSlack = int64(2 * time.Millisecond)

// sameAnswer reports whether x may be a copy of e's request by their
// answers and times. A proxy or NAT carries one answer on both legs (the
// same error and base offset), and forwards a request before its answer
// comes back: a copy answered otherwise, or, on another pair of addresses,
// sent after e's answer was captured (echoSlack), is a re-send on another connection
// that happens to carry the first attempt's correlation ID (librdkafka
// numbers each broker's connection on its own: after a leader move, the
// retry to the new leader can repeat it). Copies of one link (a capture
// given twice, two captures of one link) have the same addresses and may
// be skewed in time: only their answers tell them apart.
func sameAnswer(e *echoSeen, x *decode.Exchange, req int64) bool {
	if !e.answered {
		return true
	}
	sameLink := e.conn.Client == x.Conn.Client && e.conn.Broker == x.Conn.Broker
	if !sameLink && req > e.resp+echoSlack {
		return false
	}
	r := x.Batches[0].Response
	if r == nil {
		return !x.Responded
	}
	return r.ErrorCode == e.errorCode && r.BaseOffset == e.baseOffset
}

// reconnect reports whether b is a's client connecting anew to a's broker:
// the same client IP and broker address, another client port.
func reconnect(a, b *decode.ConnInfo) bool {
	return a.Client.Addr().Unmap() == b.Client.Addr().Unmap() && a.Client.Port() != b.Client.Port() &&
		a.Broker.Addr().Unmap() == b.Broker.Addr().Unmap() && a.Broker.Port() == b.Broker.Port()
}

// echoKey digests what makes two exchanges copies of one request.
func (d *Detector) echoKey(x *decode.Exchange) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(x.CorrelationID))
	h.Write(b[:4])
	binary.LittleEndian.PutUint32(b[:4], uint32(len(x.Batches)))
	h.Write(b[:4])
	if x.ClientID != nil {
		h.WriteByte(1)
		h.WriteString(*x.ClientID)
	}
	bt := &x.Batches[0]
	h.WriteByte(0)
	h.WriteString(bt.Topic)
	h.Write(bt.TopicID[:])
	binary.LittleEndian.PutUint32(b[:4], uint32(bt.Partition))
	h.Write(b[:4])
	binary.LittleEndian.PutUint32(b[:4], bt.CRC)
	h.Write(b[:4])
	binary.LittleEndian.PutUint64(b[:], bt.Hash)
	h.Write(b[:])
	return h.Sum64()
}

// sighted remembers x as the first copy of its request; key is x's echo
// key when keyed (echoOf computed it).
func (d *Detector) sighted(x *decode.Exchange, req, seen int64, key uint64, keyed bool) {
	if d.echoWindow < 0 || x.Conn == nil || len(x.Batches) == 0 {
		return
	}
	es := &d.echo
	if es.seen == nil {
		es.seen = make(map[uint64]echoSeen)
	}
	k := key
	if !keyed {
		k = d.echoKey(x)
	}
	if _, ok := es.seen[k]; !ok {
		for len(es.seen) >= maxEchoes {
			q, ok := es.order.Front()
			if !ok {
				break
			}
			es.order.Pop()
			if e, ok := es.seen[q.key]; ok && e.seen == q.seen {
				delete(es.seen, q.key)
			}
		}
	}
	e := echoSeen{conn: x.Conn, req: req, seen: seen, corr: x.CorrelationID, crc: x.Batches[0].CRC, cluster: x.Cluster}
	if r := x.Batches[0].Response; r != nil && x.Responded {
		e.answered, e.errorCode, e.baseOffset, e.resp = true, r.ErrorCode, r.BaseOffset, unixNano(x.ResponseTime)
	}
	es.seen[k] = e
	es.order.Push(echoQueued{seen: seen, key: k})
	// The same key sighted again (a request replayed) queues it again
	// while seen keeps one entry: bound the queue too, or a capture whose
	// times never pass the cutoff would grow it without end. A sighting
	// still current when its entry is popped here is forgotten: the bound
	// wins over the window.
	for es.order.Len() > 2*maxEchoes {
		q, _ := es.order.Front()
		es.order.Pop()
		if e, ok := es.seen[q.key]; ok && e.seen == q.seen && q.key != k {
			delete(es.seen, q.key)
		}
	}
}

// expireEchoes forgets the first copies kept long enough.
func (d *Detector) expireEchoes() {
	es := &d.echo
	if len(es.seen) == 0 {
		es.order.Reset()
		return
	}
	cutoff := d.newest - echoKeep*max(d.echoWindow, 0)
	for {
		q, ok := es.order.Front()
		if !ok || q.seen >= cutoff {
			return
		}
		es.order.Pop()
		if e, ok := es.seen[q.key]; ok && e.seen == q.seen {
			delete(es.seen, q.key)
		}
	}
}

// fold counts x, an echo of first, and learns its leg's client and broker
// as the first copy's.
func (d *Detector) fold(x *decode.Exchange, first echoSeen) {
	es := &d.echo
	d.stats.Echoes++
	a, b := first.conn, x.Conn
	leg := -1
	for i, p := range es.pairs {
		if p[0] == a && p[1] == b {
			leg = i
			break
		}
	}
	if leg < 0 && len(es.legs) < MaxEchoLegs {
		es.pairs = append(es.pairs, [2]*decode.ConnInfo{a, b})
		es.legs = append(es.legs, EchoLeg{FirstClient: a.Client, FirstBroker: a.Broker, SecondClient: b.Client, SecondBroker: b.Broker})
		leg = len(es.legs) - 1
	}
	if leg >= 0 {
		es.legs[leg].Requests++
	}

	if raw, to := d.rawClientOwner(b, x.ClientID), d.clientOwner(a, x.ClientID); raw != to {
		if es.owners == nil {
			es.owners = make(map[owner]owner)
		}
		if _, ok := es.owners[raw]; !ok && len(es.owners) < maxAliases {
			es.owners[raw] = to
		}
	}
	if raw, to := b.Broker, d.resolveBroker(a.Broker); raw != to {
		if es.brokers == nil {
			es.brokers = make(map[netip.AddrPort]netip.AddrPort)
		}
		if _, ok := es.brokers[raw]; !ok && len(es.brokers) < maxAliases {
			es.brokers[raw] = to
		}
	}
}

// maxAliasHops bounds the aliases followed: each is learned pointing at
// one resolved then, so chains are short, and a bound makes a cycle
// harmless.
const maxAliasHops = 8

// resolveOwner is the client o stands for: o itself unless an echo showed
// it to be another's copy.
func (d *Detector) resolveOwner(o owner) owner {
	m := d.echo.owners
	for range maxAliasHops {
		to, ok := m[o]
		if !ok {
			break
		}
		o = to
	}
	return o
}

// resolveBroker is resolveOwner for broker addresses.
func (d *Detector) resolveBroker(a netip.AddrPort) netip.AddrPort {
	m := d.echo.brokers
	for range maxAliasHops {
		to, ok := m[a]
		if !ok {
			break
		}
		a = to
	}
	return a
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
