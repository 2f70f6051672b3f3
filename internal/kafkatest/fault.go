package kafkatest

import (
	"fmt"
	"time"
)

// Action is what the broker does to a faulted produce request, always after
// the broker has appended its batches.
type Action int

const (
	// TimedOutAfterAppend holds the response until the request's own
	// TimeoutMillis has passed since it arrived, then answers every partition
	// that succeeded with REQUEST_TIMED_OUT (7) and the base offset the broker
	// appended at, like Kafka's expired DelayedProduce with acks=all.
	TimedOutAfterAppend Action = iota + 1
	// Delay holds the response for Fault.Delay, then sends it unchanged. A
	// delay longer than the client's own timeout makes the client give up on
	// the connection before the answer arrives.
	Delay
	// CloseAfterAppend closes the connection instead of answering.
	CloseAfterAppend
)

func (a Action) String() string {
	switch a {
	case TimedOutAfterAppend:
		return "timed_out_after_append"
	case Delay:
		return "delay"
	case CloseAfterAppend:
		return "close_after_append"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Fault selects produce requests (acks != 0) and says what to do to them.
// Selection is deterministic: on each connection, the produce requests that
// carry Topic are counted from 1, and every Every-th of them is faulted, until
// Max requests have been faulted in the whole cluster. A retry is a new
// request and is counted too, so with Every >= 2 the retry of a faulted
// request is answered normally.
type Fault struct {
	Action Action
	// Topic selects requests that carry this topic, by name or, for produce
	// v13, by the topic ID a Metadata response on any connection named; ""
	// selects every produce request.
	Topic string
	// Every faults the Every-th, 2*Every-th, ... matching request on each
	// connection; 0 or 1 faults every matching request.
	Every int
	// Max bounds the requests this fault answers in the whole cluster; it
	// must be positive.
	Max int
	// Delay is how long Delay holds the response.
	Delay time.Duration
}

func (f Fault) validate() error {
	switch f.Action {
	case TimedOutAfterAppend, CloseAfterAppend:
	case Delay:
		if f.Delay <= 0 {
			return fmt.Errorf("kafkatest: fault %s needs a positive Delay", f.Action)
		}
	default:
		return fmt.Errorf("kafkatest: unknown fault action %d", int(f.Action))
	}
	if f.Max <= 0 {
		return fmt.Errorf("kafkatest: fault %s needs a positive Max, got %d", f.Action, f.Max)
	}
	if f.Every < 0 {
		return fmt.Errorf("kafkatest: fault %s has negative Every %d", f.Action, f.Every)
	}
	return nil
}

// Event is one fault the cluster applied.
type Event struct {
	Action Action
	// Conn is the client's address as the broker saw it.
	Conn          string
	CorrelationID int32
	// Version is the produce request's version.
	Version int16
	// TimeoutMillis is the produce request's timeout field.
	TimeoutMillis int32
	// Partitions are the topic-partitions the request carried, as
	// "topic/partition" (topic is the name when known, else the ID in hex).
	Partitions []string
	// Received is when the request arrived; Answered when the response (or
	// the close) went out, zero if the connection closed while the response
	// was held (the client gave up first).
	Received time.Time
	Answered time.Time
}
