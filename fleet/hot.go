package fleet

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/kdupcap/kdupcap/decode"
)

// Which batches carry their record prints (and records). Record-level
// matching (detect/recordmatch.go) fingerprints only the batches near a
// failure: the failed or unanswered attempt, and the batches of the same
// client and partition after it, where the retried records go. In a fleet
// the retry often goes to another broker, on another host, whose own
// capture saw no failure: so a host cannot know from its own traffic
// alone which of its batches a correlation will match. What it does see is
// the other half of a leader move: a client's partition that comes to this
// host after a pause (the partition's leader moved here). So a batch
// carries its prints when, on its client and partition:
//
//   - its attempt failed or went unanswered, or its producer ID or epoch
//     changed (an epoch bump re-sends records under another one);
//   - it is among the HotBudget batches after such an attempt;
//   - it is among the HotBudget batches after a pause of PauseGap or more
//     since this host last saw the partition from that client: the new
//     leader's first batches, where a retry from another host lands.
//
// A steady producer's batches follow each other within milliseconds, so
// only a move (or a slow producer, whose few batches cost little) makes a
// pause. With PrintsAll (--app-duplicates) every batch carries them.

// PrintMode says which batches carry their record prints.
type PrintMode uint8

const (
	// PrintsNear: the batches near a failure or a leader move (the
	// default; what record-level matching of retries needs).
	PrintsNear PrintMode = iota
	// PrintsNone: no batch (record matching off).
	PrintsNone
	// PrintsAll: every batch (--app-duplicates).
	PrintsAll
)

const (
	// PauseGap is the pause after which a client's partition seen again
	// on a host is taken as having moved there.
	PauseGap = 100e6 // ns
	// HotBudget is how many batches after a failure or a pause carry
	// their prints: as many as detect matches after each failed attempt
	// (hotBudget in detect/recordmatch.go, which a detect test holds
	// equal to this one). Neither package can take the other's: fleet
	// must never import detect, and detect importing fleet would bring
	// kgo into report, which must never depend on it.
	HotBudget = 8
	// maxHot bounds the partitions tracked; beyond it all are forgotten,
	// and the next batch of each counts as after a pause.
	maxHot = 1 << 16
)

// hotTracker decides which batches carry their prints.
type hotTracker struct {
	seed  maphash.Seed
	parts map[uint64]hotState
}

type hotState struct {
	last   int64 // request time of the last batch, Unix ns
	budget int32
	pid    int64
	epoch  int16
}

// want reports whether batch b of x carries its prints, and counts it.
func (h *hotTracker) want(x *decode.Exchange, b *decode.Batch) bool {
	if h.parts == nil || len(h.parts) >= maxHot {
		if h.parts == nil {
			h.seed = maphash.MakeSeed()
		}
		h.parts = make(map[uint64]hotState)
	}
	k := h.key(x, b)
	req := x.RequestTime.UnixNano()
	st, ok := h.parts[k]
	failed := x.Acks != 0 && (!x.Responded || b.Response == nil || b.Response.ErrorCode != 0)
	bumped := ok && b.ProducerID >= 0 && (st.pid != b.ProducerID || st.epoch != b.ProducerEpoch)
	paused := !ok || req-st.last >= PauseGap
	want := false
	switch {
	case failed || bumped:
		st.budget = min(st.budget+HotBudget, 1<<20)
		want = true
	case paused:
		st.budget = HotBudget - 1
		want = true
	case st.budget > 0:
		st.budget--
		want = true
	}
	st.last = max(st.last, req)
	st.pid, st.epoch = b.ProducerID, b.ProducerEpoch
	h.parts[k] = st
	return want
}

// key digests the client (IP and client.id) and partition of b: its topic
// ID when it has one (Produce v13), its name otherwise, as detect's
// partitionKey does, so that a v13 batch keeps its key once decode learns
// its topic's name from a Metadata response.
func (h *hotTracker) key(x *decode.Exchange, b *decode.Batch) uint64 {
	var d maphash.Hash
	d.SetSeed(h.seed)
	if x.Conn != nil {
		ip := x.Conn.Client.Addr().Unmap().As16()
		d.Write(ip[:])
	}
	if x.ClientID != nil {
		d.WriteByte(1)
		d.WriteString(*x.ClientID)
	}
	d.WriteByte(0)
	if b.TopicID != ([16]byte{}) {
		d.Write(b.TopicID[:])
	} else {
		d.WriteString(b.Topic)
	}
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], uint32(b.Partition))
	d.Write(p[:])
	return d.Sum64()
}
