package kafkatest

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Exchange is one produce request (acks != 0) a broker answered, or was
// due to answer, as the connection wrapper saw it: the wrapper's view of
// the broker's responses, faulted or not. A Cluster keeps every one.
type Exchange struct {
	// Node is the broker's node ID.
	Node int32
	// Conn is the client's address as the broker saw it (with the proxy, the
	// proxy's leg; Client is then the real client's address).
	Conn          string
	Client        string
	CorrelationID int32
	Version       int16
	// Partitions are the request's topic-partitions, as in Event.
	Partitions []string
	// Codes are, per partition, the error code kfake answered (0: appended
	// at BaseOffsets[i]; 6 NOT_LEADER_OR_FOLLOWER: this broker was not the
	// partition's leader, nothing appended), -1 where the answer could not
	// be parsed. A fault may have changed what went on the wire
	// (TimedOutAfterAppend sends 7) or withheld it.
	Codes []int16
	// BaseOffsets are, per partition, where kfake appended, -1 on an error.
	BaseOffsets []int64
	// Fault is the fault applied to the answer, 0 for none.
	Fault Action
	// Received is when the request arrived; Answered when its answer went
	// on the wire, zero if it never did (a fault withheld it or the
	// connection closed first).
	Received time.Time
	Answered time.Time
}

// NotLeader reports whether kfake answered NOT_LEADER_OR_FOLLOWER for one
// of the request's partitions.
func (x Exchange) NotLeader() bool {
	for _, c := range x.Codes {
		if c == kerr.NotLeaderForPartition.Code {
			return true
		}
	}
	return false
}

// Carries reports whether the request carried the partition named
// "topic/partition".
func (x Exchange) Carries(partition string) bool {
	for _, p := range x.Partitions {
		if p == partition {
			return true
		}
	}
	return false
}
