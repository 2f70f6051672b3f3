package decode

import "time"

// EndSide says which side of a Kafka connection ended it.
type EndSide string

const (
	// EndByClient: the client sent the connection's first FIN or RST.
	EndByClient EndSide = "client"
	// EndByBroker: the broker sent it (or something between that speaks
	// for the broker's address: a proxy, a load balancer, a firewall).
	EndByBroker EndSide = "broker"
	// EndByNone: the capture shows no FIN or RST (EndHow says why the
	// connection ended there).
	EndByNone EndSide = ""
)

// EndHow says how a Kafka connection ended in the capture.
type EndHow string

const (
	EndFIN EndHow = "fin" // a FIN (or a TLS close_notify): the sender closed its side in order
	EndRST EndHow = "rst" // an RST: the sender reset the connection
	// EndOfCapture: the capture ended with the connection still open.
	EndOfCapture EndHow = "end_of_capture"
	// EndIdle: no FIN or RST was captured; the connection was closed
	// after the capture's idle timeout (or its FIN was not captured).
	EndIdle EndHow = "idle"
	// EndEvicted: the capture held too many connections and let this one
	// go (capture.Evicter); it may have gone on.
	EndEvicted EndHow = "evicted"
)

// ConnEnd is how one Kafka connection ended: who sent its first FIN or
// RST and when, or, with By EndByNone, why the capture shows no end.
type ConnEnd struct {
	By   EndSide
	How  EndHow
	Time time.Time
}

// String names the end as a person would: "broker RST", "client FIN",
// "end of capture".
func (e ConnEnd) String() string {
	switch e.How {
	case EndFIN:
		return string(e.By) + " FIN"
	case EndRST:
		return string(e.By) + " RST"
	case EndOfCapture:
		return "end of capture"
	case EndIdle:
		return "idle (no FIN or RST captured)"
	case EndEvicted:
		return "evicted"
	}
	return string(e.How)
}

// EndSink is an optional interface of a Sink: ConnEnd is called once for
// each connection taken as Kafka, with how it ended. It comes when the
// capture shows the connection's first FIN or RST (after every byte the
// sender sent before it, so after every Exchange those bytes completed,
// but before the Exchanges its Close completes), or at Close when the
// capture shows neither. c is the connection's ConnInfo, as its Exchanges
// hold it.
type EndSink interface {
	ConnEnd(c *ConnInfo, e ConnEnd)
}

// End implements capture's Ender: the FIN or RST of one direction, in
// order with its Data. Only the first of a connection is reported.
func (c *Conn) End(fromA bool, rst bool, ts time.Time) {
	if c.ended || c.closed {
		return
	}
	c.ended = true
	if c.info == nil || c.d.esink == nil {
		return
	}
	by := EndByBroker
	if fromA == c.clientIsA {
		by = EndByClient
	}
	how := EndFIN
	if rst {
		how = EndRST
	}
	c.d.esink.ConnEnd(c.info, ConnEnd{By: by, How: how, Time: ts})
}

// endAtClose reports the end of a connection that ended with no FIN or
// RST captured.
func (c *Conn) endAtClose(ts time.Time) {
	if c.ended {
		return
	}
	c.ended = true
	if c.info == nil || c.d.esink == nil {
		return
	}
	how := EndIdle
	switch {
	case c.evicted:
		how = EndEvicted
	case c.d.atEnd:
		how = EndOfCapture
	}
	c.d.esink.ConnEnd(c.info, ConnEnd{How: how, Time: ts})
}
