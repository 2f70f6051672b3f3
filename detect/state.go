package detect

import (
	"github.com/kdupcap/kdupcap/internal/fifo"
	"hash/maphash"
	"time"

	"github.com/kdupcap/kdupcap/decode"
)

// owner is who may re-send a batch, as a key: the connection (scope
// connection), or a 64-bit hash of the client's IP and client.id (grouping
// across connections, not idempotent), or nobody in particular (across
// connections, idempotent: the producer ID and epoch in seqKey say who).
// Unused fields are zero. A hash keeps the keys of a million batches small;
// two clients whose hashes collide would also have to send the same batch
// bytes to the same partition to be mistaken for one.
type owner struct {
	conn   uint64
	client uint64
}

// bytesKey finds a batch by its bytes; seqKey finds an idempotent batch by
// its sequence span. Both hold the topic ID when it is set, else the name.
// cluster is 0 but in the key of a batch filed apart from another
// cluster's batch of the same key (see cluster.go).
type bytesKey struct {
	owner
	cluster   uint16
	topic     string
	topicID   [16]byte
	partition int32
	crc       uint32
	hash      uint64
}

type seqKey struct {
	owner
	cluster         uint16
	topic           string
	topicID         [16]byte
	partition       int32
	producerEpoch   int16
	firstSequence   int32
	lastOffsetDelta int32
	producerID      int64
}

// attempt is what an Attempt needs of one exchange, kept small: times are
// Unix nanoseconds, and nothing of the exchange is copied but its fields.
type attempt struct {
	reqTime       int64
	respTime      int64 // of the exchange's response, when responded
	baseOffset    int64
	logAppendTime int64
	noResponse    decode.NoResponse
	conn          *decode.ConnInfo
	clientID      *string
	correlationID int32
	timeoutMillis int32
	version       int16
	acks          int16
	errorCode     int16
	hash          uint64 // of this attempt's bytes: an idempotent resend may differ
	crc           uint32
	responded     bool // the exchange has a response
	partResp      bool // the response named this partition
	// cluster numbers the cluster of the attempt's broker (Detector.clusters),
	// 0 when the capture does not tell (see cluster.go).
	cluster uint16
	// showConn, set on the copies a Finding is built from when its attempts
	// span connections, names the connection with the correlation ID in
	// reasons: correlation IDs are per connection.
	showConn bool
}

// batch is one remembered record batch: its header fields once, and its
// attempts. Most batches are sent once, so the first attempt is held inline
// and more is allocated only for a resend. A forgotten batch's list goes to
// Detector.spare (up to maxSpare lists of at most maxSpareAttempts), not to
// its slot: kept in the slot, every slot would in time hold one, which is
// memory for resends as large as the slab.
type batch struct {
	// The connection, client.id, CRC and bytes hash that file the batch
	// are its first attempt's (first.conn, first.clientID, first.crc,
	// first.hash).
	topic   string
	topicID [16]byte

	producerID      int64
	last            int64 // packet time of the newest attempt, Unix ns
	partition       int32
	producerEpoch   int16
	magic           int8
	firstSequence   int32
	lastOffsetDelta int32
	numRecords      int32
	gen             uint32 // bumped when the slot is reused or touched
	inUse           bool   // the slot holds a remembered batch
	// Streaming mode only (both fit in padding): dirty is set while the
	// batch has a finding not reported in its current state; reported is the
	// verdict last reported (verdictNone before the first report).
	dirty    bool
	reported verdictCode
	// byClient: an idempotent batch filed under its client, not under its
	// producer ID alone, because another producer of the same ID and epoch
	// (another cluster's) held that key; see otherProducer.
	byClient bool
	// records: a record-level finding's stand-in, whose verdict speaks of
	// records, not of a batch.
	records bool
	// cluster is the first known cluster of the attempts (0: none known);
	// keyCluster is the cluster in the batch's key, 0 unless it was filed
	// apart from another cluster's batch of the same key (cluster.go).
	cluster    uint16
	keyCluster uint16
	// owner is the owner in the batch's key, as it was filed: what
	// clientOwner gives may change as capture duplicates teach aliases
	// (echo.go).
	owner owner

	first attempt
	more  []attempt
	// omitted counts attempts beyond MaxAttempts, not kept.
	omitted int32
}

// MaxAttempts is the most attempts of one batch a Finding holds; later ones
// are counted in Finding.AttemptsOmitted.
const MaxAttempts = 100

const (
	maxSpare         = 1024
	maxSpareAttempts = 4
)

func (b *batch) idempotent() bool { return b.producerID >= 0 }

func (b *batch) keyTopic() string {
	if b.topicID != ([16]byte{}) {
		return ""
	}
	return b.topic
}

// ownerOf is the key part that says who sent a batch's attempts: the
// connection with ScopeConnection, else the client across its connections.
func (d *Detector) ownerOf(conn *decode.ConnInfo, clientID *string, idempotent bool) owner {
	switch {
	case d.scope == ScopeConnection:
		return owner{conn: conn.ID}
	case idempotent:
		return owner{}
	}
	return d.clientOwner(conn, clientID)
}

// clientOwner is the owner of the batches of one client across its
// connections: its IP (not its port) and client.id; for the connections of
// a proxy's or a NAT's other leg, the client whose requests they copy
// (echo.go).
func (d *Detector) clientOwner(conn *decode.ConnInfo, clientID *string) owner {
	return d.resolveOwner(d.rawClientOwner(conn, clientID))
}

// rawClientOwner is clientOwner without aliases.
func (d *Detector) rawClientOwner(conn *decode.ConnInfo, clientID *string) owner {
	var h maphash.Hash
	h.SetSeed(d.seed)
	ip := conn.Client.Addr().Unmap().As16()
	h.Write(ip[:])
	if clientID != nil {
		h.WriteByte(1)
		h.WriteString(*clientID)
	}
	return owner{client: h.Sum64()}
}

func (d *Detector) bytesKey(b *batch) bytesKey {
	return bytesKey{owner: b.owner, cluster: b.keyCluster, topic: b.keyTopic(), topicID: b.topicID,
		partition: b.partition, crc: b.first.crc, hash: b.first.hash}
}

// otherProducer reports whether at, of an idempotent batch with b's
// producer ID, epoch and sequence span, comes from another producer than b's
// attempts: its bytes are none of theirs and its client (IP and client.id)
// is not theirs, or it went to a broker none of theirs went to that is not
// known to be of their cluster. Producer IDs are per cluster and every
// cluster hands out 0, 1, 2..., so one host may see two producers of one
// ID, even of one client.id; a producer's own retry carries its bytes
// again, or comes from its own client when rebuilt, to the same broker or
// one of the same cluster (cluster.go).
func (d *Detector) otherProducer(b *batch, conn *decode.ConnInfo, at *attempt) bool {
	if b.first.hash == at.hash {
		return false
	}
	for i := range b.more {
		if b.more[i].hash == at.hash {
			return false
		}
	}
	return d.clientOwner(conn, at.clientID) != d.clientOwner(b.first.conn, b.first.clientID) ||
		!d.sameClusterKnown(b, conn, at)
}

func (d *Detector) seqKey(b *batch) seqKey {
	return seqKey{owner: b.owner, cluster: b.keyCluster, topic: b.keyTopic(), topicID: b.topicID,
		partition: b.partition, producerEpoch: b.producerEpoch,
		firstSequence: b.firstSequence, lastOffsetDelta: b.lastOffsetDelta,
		producerID: b.producerID}
}

// queued is an entry of an age queue: slot was touched at time when its
// generation was gen. Entries whose gen no longer matches are stale.
type queued struct {
	time int64
	slot int32
	gen  uint32
}

// ageQueue holds slots in the order they were touched, which is close to
// packet time order.
type ageQueue = fifo.Queue[queued]

// unixNano converts a packet time; the zero time stays 0.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano converts back; 0 is the Unix epoch (a capture may hold it),
// never the zero time.
func fromUnixNano(n int64) time.Time { return time.Unix(0, n).UTC() }

// sameRequest reports whether b already holds an attempt of the request at:
// a request naming one partition twice with the same batch is one send.
func (b *batch) sameRequest(at *attempt) bool {
	if b.first.correlationID == at.correlationID && b.first.reqTime == at.reqTime && b.first.conn == at.conn {
		return true
	}
	for i := range b.more {
		if b.more[i].correlationID == at.correlationID && b.more[i].reqTime == at.reqTime && b.more[i].conn == at.conn {
			return true
		}
	}
	return false
}

// spans reports whether b's attempts were sent on more than one connection.
func (b *batch) spans() bool {
	for i := range b.more {
		if b.more[i].conn != b.first.conn {
			return true
		}
	}
	return false
}
