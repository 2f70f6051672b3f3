package decode

import (
	"net/netip"
	"slices"
	"time"
)

// Shared is what the connections of one capture share beyond their own
// bytes: the numbering of the connections taken as Kafka, the topic names
// Metadata responses gave by ID (and which response first did), and the
// first malformed-input messages. A Decoder keeps its own Shared and
// applies to it what it decodes, at once.
//
// When one capture's connections are spread over several Decoders (a
// sharded run, each Decoder on its own goroutine), the answer must still be
// the one a single Decoder gives: connections numbered in capture order,
// a topic named by a Metadata response on one connection known to a
// Produce v13 request on another, the first MaxErrors messages of the whole
// capture. So each such Decoder is made with a Sink that is also a
// SharedSink: it applies nothing itself and hands each Event to the Sink,
// which files it with the position of the packet that caused it; the
// caller then applies the Events of all Decoders to one Shared in capture
// order (Apply), and names the topics of each exchange and fetch from it
// (Resolve, ResolveFetch) before using them.
type Shared struct {
	nextID uint64
	// topicIDs maps a topic ID to its name, from Metadata responses v10+.
	topicIDs map[[16]byte]string
	// topicFrom: the response that first named each topic ID.
	topicFrom map[[16]byte]topicSource
	errs      []string
	// clusters: the cluster of each broker address (cluster.go).
	clusters clusterMap
}

// NewShared returns an empty Shared.
func NewShared() *Shared {
	return &Shared{topicIDs: make(map[[16]byte]string)}
}

// EventKind says what an Event carries.
type EventKind uint8

const (
	// EventConnection: Conn was taken as Kafka; Apply numbers it (sets
	// Conn.ID, zero until then).
	EventConnection EventKind = iota + 1
	// EventTopic: a Metadata response on Conn, completed at Time, named
	// topic TopicID Name.
	EventTopic
	// EventError: Name is a malformed-input message.
	EventError
	// EventCluster: a Metadata or DescribeCluster response on Conn,
	// completed at Time, showed cluster ID Name holding Brokers.
	EventCluster
)

// Event is one change to a Shared, made by a Decoder whose Sink is a
// SharedSink. Name is interned or copied: it never aliases frame bytes.
type Event struct {
	Kind    EventKind
	Conn    *ConnInfo
	TopicID [16]byte
	Name    string
	Time    time.Time
	// Brokers, of an EventCluster, is the Event's own slice.
	Brokers []netip.AddrPort
}

// SharedSink is a Sink of a Decoder that shares a capture with others (see
// Shared): the Decoder hands it every Event instead of applying it.
type SharedSink interface {
	Sink
	Shared(Event)
}

// Apply does what e says, as the Decoder that made it would have done to
// its own Shared.
func (s *Shared) Apply(e Event) {
	switch e.Kind {
	case EventConnection:
		s.nextID++
		e.Conn.ID = s.nextID
	case EventTopic:
		s.learnTopic(e.TopicID, e.Name)
		if s.topicFrom == nil {
			s.topicFrom = make(map[[16]byte]topicSource)
		}
		if _, ok := s.topicFrom[e.TopicID]; !ok && len(s.topicFrom) < maxTopicIDs {
			s.topicFrom[e.TopicID] = topicSource{e.Conn, e.Time}
		}
	case EventError:
		if len(s.errs) < MaxErrors {
			s.errs = append(s.errs, e.Name)
		}
	case EventCluster:
		s.learnCluster(e.Name, e.Brokers)
	}
}

// learnTopic records name as the topic with ID id, within the bound on IDs.
func (s *Shared) learnTopic(id [16]byte, name string) {
	old, ok := s.topicIDs[id]
	switch {
	case ok && old == name:
	case !ok && len(s.topicIDs) >= maxTopicIDs:
		// Bounded: an ID first seen past the bound stays unnamed.
	default:
		s.topicIDs[id] = name
	}
}

// Resolve names the batches of x given by topic ID only, from the topics
// learned so far, and x's cluster (Exchange.Cluster). Exchanges a Decoder hands its Sink have been through its
// own Shared's Resolve, unless the Sink is a SharedSink.
func (s *Shared) Resolve(x *Exchange) {
	if x.Conn != nil {
		x.Cluster = s.ClusterOf(x.Conn.Broker)
	}
	for i := range x.Batches {
		b := &x.Batches[i]
		if b.Topic == "" && b.TopicID != ([16]byte{}) {
			b.Topic = s.topicIDs[b.TopicID]
		}
	}
}

// ResolveFetch names the topics of f's partitions, and of their batches,
// that Metadata responses named by ID, as Resolve does for produce
// exchanges.
func (s *Shared) ResolveFetch(f *Fetch) {
	for i := range f.Partitions {
		fp := &f.Partitions[i]
		if fp.Topic == "" && fp.TopicID != ([16]byte{}) {
			fp.Topic = s.topicIDs[fp.TopicID]
		}
		for j := range fp.Batches {
			fp.Batches[j].Topic = fp.Topic
		}
	}
}

// Errors returns the first malformed-input messages, each naming the
// connection direction and byte position.
func (s *Shared) Errors() []string { return slices.Clone(s.errs) }

// TopicNamedBy returns the connection and time of the Metadata response
// that first named topic ID id, so that a capture cut down to a finding's
// packets can keep it (Produce and Fetch v13 name topics by ID only).
func (s *Shared) TopicNamedBy(id [16]byte) (*ConnInfo, time.Time, bool) {
	t, ok := s.topicFrom[id]
	return t.conn, t.at, ok
}

// topicSource is the Metadata response that first named a topic ID.
type topicSource struct {
	conn *ConnInfo
	at   time.Time
}
