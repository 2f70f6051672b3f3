package fleet

import "github.com/kdupcap/kdupcap/decode"

// Connection IDs are per host, and per run of it: two hosts both number
// their first connection 1. A Decoder gives every (host, run, connection)
// one decode.ConnInfo of its own, numbered from 1 in the order first read,
// so that two hosts' connections never collide, and remembers each one's
// host (HostOf).

// DefaultMaxConns bounds the connections a Decoder remembers; beyond it
// the least recently used is forgotten (a later record of it makes a new
// one, under a new ID).
const DefaultMaxConns = 1 << 17

// Event is one record read back with its connection resolved: what a
// correlation feeds to detect.
type Event struct {
	Kind Kind
	Header
	// Conn is the connection's ConnInfo, shared by all its events, its ID
	// the Decoder's own.
	Conn *decode.ConnInfo
	// Exchange, for KindAttempt, its Conn set; End for KindConnEnd;
	// EndTxn and InitProducerID for KindEndTxn and KindInitProducerID,
	// their Conn set.
	Exchange       *decode.Exchange
	End            decode.ConnEnd
	EndTxn         *decode.EndTxn
	InitProducerID *decode.InitProducerID
}

// streamKey names one run of one host.
type streamKey struct {
	host string
	run  uint64
}

type connKey struct {
	stream streamKey
	id     uint64
}

type connEntry struct {
	info *decode.ConnInfo
	host string
	used uint64 // the Decoder's use counter when last read
}

// Decoder reads records into Events. It is not safe for concurrent use.
type Decoder struct {
	max    int
	nextID uint64
	uses   uint64
	conns  map[connKey]*connEntry
	byID   map[uint64]*connEntry
	names  map[string]string
	// topics names the topic IDs the attempts read carried with a name.
	topics map[[16]byte]string
}

// NewDecoder returns a Decoder remembering at most maxConns connections
// (0: DefaultMaxConns).
func NewDecoder(maxConns int) *Decoder {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	return &Decoder{max: maxConns, conns: make(map[connKey]*connEntry), byID: make(map[uint64]*connEntry), names: make(map[string]string),
		topics: make(map[[16]byte]string)}
}

// maxNames bounds the strings a Decoder interns.
const maxNames = 1 << 16

func (d *Decoder) intern(s string) string {
	if n, ok := d.names[s]; ok {
		return n
	}
	if len(d.names) < maxNames {
		d.names[s] = s
	}
	return s
}

// Decode reads one record value into an Event (Decode's errors).
func (d *Decoder) Decode(value []byte) (Event, error) {
	rec, err := Decode(value)
	if err != nil {
		return Event{}, err
	}
	return d.Resolve(rec), nil
}

// Resolve gives rec its connection.
func (d *Decoder) Resolve(rec Record) Event {
	rec.Host = d.intern(rec.Host)
	ev := Event{Kind: rec.Kind, Header: rec.Header, Exchange: rec.Exchange, End: rec.End,
		EndTxn: rec.EndTxn, InitProducerID: rec.InitProducerID}
	k := connKey{stream: streamKey{rec.Host, rec.Run}, id: rec.ConnID}
	d.uses++
	e, ok := d.conns[k]
	if !ok {
		if len(d.conns) >= d.max {
			d.forget()
		}
		d.nextID++
		info := rec.Conn
		info.ID = d.nextID
		if !rec.Details {
			info.FirstSeen = rec.At
			switch {
			case rec.Exchange != nil:
				info.FirstSeen = rec.Exchange.RequestTime
			case rec.EndTxn != nil:
				info.FirstSeen = rec.EndTxn.RequestTime
			case rec.InitProducerID != nil:
				info.FirstSeen = rec.InitProducerID.RequestTime
			}
		}
		e = &connEntry{info: &info, host: rec.Host}
		d.conns[k] = e
		d.byID[info.ID] = e
	} else if rec.Details && e.info.ClientSoftwareName == "" && e.info.SASLMechanism == "" && !e.info.ApiVersionsSent {
		// The details of a connection first read without them. (Only
		// where none were known: detect and profile may hold the
		// ConnInfo, and a finding's fields must not change under them.)
		id, first := e.info.ID, e.info.FirstSeen
		*e.info = rec.Conn
		e.info.ID, e.info.FirstSeen = id, first
	}
	e.used = d.uses
	ev.Conn = e.info
	if x := ev.Exchange; x != nil {
		x.Conn = e.info
		if x.ClientID != nil {
			s := d.intern(*x.ClientID)
			x.ClientID = &s
		}
		for i := range x.Batches {
			d.topicOf(&x.Batches[i])
		}
	}
	if ev.EndTxn != nil {
		ev.EndTxn.Conn = e.info
	}
	if ev.InitProducerID != nil {
		ev.InitProducerID.Conn = e.info
	}
	d.internTxn(&ev)
	return ev
}

// topicOf interns b's topic name and, for a batch named by topic ID only
// (Produce v13 on a host that saw no Metadata answer naming it), gives it
// the name another attempt read so far carried with the same ID. A host
// names a topic only if it captured a Metadata answer naming it; one
// whose producers' Metadata went to another host publishes IDs alone.
func (d *Decoder) topicOf(b *decode.Batch) {
	var zero [16]byte
	switch {
	case b.TopicID == zero:
	case b.Topic != "":
		if _, ok := d.topics[b.TopicID]; !ok && len(d.topics) < maxNames {
			d.topics[b.TopicID] = d.intern(b.Topic)
		}
	default:
		b.Topic = d.topics[b.TopicID]
		return
	}
	b.Topic = d.intern(b.Topic)
}

// forget drops the least recently used quarter of the connections.
func (d *Decoder) forget() {
	uses := make([]uint64, 0, len(d.conns))
	for _, e := range d.conns {
		uses = append(uses, e.used)
	}
	// The quarter's boundary, by a selection good enough for a rare path.
	cut := quantile(uses, len(uses)/4)
	for k, e := range d.conns {
		if e.used <= cut {
			delete(d.conns, k)
			delete(d.byID, e.info.ID)
		}
	}
}

// quantile returns the k-th smallest of v (v is reordered).
func quantile(v []uint64, k int) uint64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		p := v[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// HostOf returns the host of the connection the Decoder numbered id, ""
// when it does not know it (forgotten).
func (d *Decoder) HostOf(id uint64) string {
	if e, ok := d.byID[id]; ok {
		return e.host
	}
	return ""
}
