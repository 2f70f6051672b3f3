package capture

import (
	"net/netip"
	"time"
)

// Stream receives the reassembled bytes of one TCP connection, both
// directions. It is made of standard types only, so that the Kafka decoder
// can satisfy it without importing this package.
//
// A and B are the two endpoints handed to the NewStreamFunc that created the
// stream; fromA says which of them sent the bytes. Which side is the Kafka
// client is for the receiver to decide: capture knows nothing of Kafka.
type Stream interface {
	// Data hands the next in-order bytes of one direction. data is owned by
	// capture and is valid only during the call: copy what must be kept.
	// Returning false tells capture the connection is of no interest (not
	// Kafka); capture then stops reassembling it and delivers nothing more
	// but Close.
	Data(fromA bool, data []byte, ts time.Time) bool
	// Gap reports that n bytes of one direction were lost (not in the
	// capture) before the next Data of that direction; n < 0 if unknown.
	Gap(fromA bool, n int, ts time.Time)
	// Close reports the end of the connection: FIN or RST seen, evicted as
	// idle, or the end of the input. Nothing is delivered after it.
	Close(ts time.Time)
}

// Evicter is a Stream that wants to know when its connection is closed
// early, evicted because the connections held reached
// AssemblerOptions.MaxConnections, rather than ended: Evict is called
// instead of Close, and nothing is delivered after it. The connection may
// go on in the capture; its later packets make a new Stream, from the
// middle of the stream.
type Evicter interface {
	Stream
	Evict(ts time.Time)
}

// Ender is a Stream that wants to know how each direction of its
// connection ended: End is called once for each direction whose FIN or RST
// the capture shows, after that direction's last Data (fromA says which
// direction, rst whether it was an RST, ts the packet's time), before
// Close. It is not called for a direction that an RST of the other ended,
// nor for a connection ended by an idle timeout, an eviction or the end of
// the input without a FIN or RST: Close (or Evict) alone tells those.
// Package tlsdecrypt also calls End (rst false) for a decrypted TLS
// close_notify alert, which ends its sender's side as a FIN does.
type Ender interface {
	Stream
	End(fromA bool, rst bool, ts time.Time)
}

// NewStreamFunc is called once for every new TCP connection; a is the source
// endpoint of the first packet seen, b its destination. Returning nil ignores
// the connection.
type NewStreamFunc func(a, b netip.AddrPort, ts time.Time) Stream
