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
	// the connection before the answer arrives (it closes the connection
	// itself: the "client closes after its own timeout" case).
	Delay
	// CloseAfterAppend ends the connection with a clean FIN instead of
	// answering: the broker shuts its sending side (shutdown SHUT_WR, so the
	// FIN goes out even if the client's next requests sit unread in the
	// broker's receive buffer, where a plain close would make Linux send RST
	// instead), stops handing requests to kfake, reads and discards what the
	// client still sends until the client closes its side (at most
	// closeDrain, 1s), then closes. Only client data arriving after that
	// last close is answered by the kernel with an RST, after the FIN. Over
	// TLS no close_notify alert goes before the FIN: the TCP connection just
	// ends, as when a broker's process or its network drops it.
	CloseAfterAppend
	// ResetAfterAppend resets the connection instead of answering:
	// SO_LINGER 0, then close, so the broker sends RST and nothing else.
	ResetAfterAppend
	// AnswerThenReset sends the real answer (no error, the real offsets),
	// waits until it has left the broker's socket (Linux's SIOCOUTQNSD),
	// then resets the connection (SO_LINGER 0, close: RST). The answer is
	// on the wire at the capture point but never reaches the client: the
	// cluster puts an in-harness TCP proxy in front of the broker
	// (ClusterConfig.Proxy, turned on by this action), the capture sees the
	// proxy-broker leg, and the proxy drops this answer and resets the
	// client's connection, as a middlebox or a lossy link past the capture
	// point would. (Without the proxy the client would still read the
	// answer: on Linux data already in a receive queue stays readable after
	// an RST.) The client
	// re-sends on a new connection. Plaintext only: over TLS (SetTLS) the
	// proxy sees only ciphertext and could not tell the answer apart, so
	// the fault is never applied there (Run refuses the combination).
	AnswerThenReset
)

func (a Action) String() string {
	switch a {
	case TimedOutAfterAppend:
		return "timed_out_after_append"
	case Delay:
		return "delay"
	case CloseAfterAppend:
		return "close_after_append"
	case ResetAfterAppend:
		return "reset_after_append"
	case AnswerThenReset:
		return "answer_then_reset"
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
	case TimedOutAfterAppend, CloseAfterAppend, ResetAfterAppend, AnswerThenReset:
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
	// Node is the broker's node ID.
	Node int32
	// Conn is the client's address as the broker saw it: with the proxy
	// (ClusterConfig.Proxy) the proxy's end of its leg to the broker, the
	// "client" of a capture; Client is then the real client's address as
	// the proxy saw it ("" without the proxy).
	Conn          string
	Client        string
	CorrelationID int32
	// Version is the produce request's version.
	Version int16
	// TimeoutMillis is the produce request's timeout field.
	TimeoutMillis int32
	// Partitions are the topic-partitions the request carried, as
	// "topic/partition" (topic is the name when known, else the ID in hex).
	Partitions []string
	// BaseOffsets are, per partition, the offset kfake appended the
	// partition's batch at, or -1 where kfake answered an error (nil if the
	// answer could not be parsed).
	BaseOffsets []int64
	// Received is when the request arrived; Answered when the response (or
	// the close) went out, zero if the connection closed while the response
	// was held (the client gave up first).
	Received time.Time
	Answered time.Time
	// Ended is when the connection ended: for CloseAfterAppend,
	// ResetAfterAppend and AnswerThenReset when the broker ended it (just
	// before it sent the FIN or RST; the event is recorded before, so
	// whoever sees the connection end finds it); for a held answer
	// (TimedOutAfterAppend, Delay) whose connection closed first, when the
	// broker saw it close (the client gave up); zero otherwise.
	Ended time.Time
}
