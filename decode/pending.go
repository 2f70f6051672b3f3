package decode

// pending is a request awaiting its response.
type pending struct {
	corr     int32
	key      int16
	version  int16
	flexible bool
	// x is the exchange of a ProduceRequest, nil for other requests.
	x *Exchange
	// aux is what decode keeps of a Fetch, InitProducerId or EndTxn
	// request it decodes; nil for other requests.
	aux *auxRequest
	// lost: a gap in the responses happened while this request was
	// pending, so its answer may have been lost.
	lost bool
}

// push appends p to the pending requests, evicting the oldest beyond
// Options.MaxPending.
func (c *Conn) push(p pending) {
	if len(c.pending) >= c.d.opts.MaxPending {
		old := c.pending[0]
		c.d.stats.Evicted++
		if old.x != nil {
			old.x.NoResponse = NoResponseEvicted
			c.d.emit(old.x)
		}
		c.drop(1)
	}
	c.pending = append(c.pending, p)
}

// findPending returns the index of the oldest pending request with
// correlation ID corr, or -1.
func (c *Conn) findPending(corr int32) int {
	for i := range c.pending {
		if c.pending[i].corr == corr {
			return i
		}
	}
	return -1
}

// answered completes the pending request at index i, which is being
// answered, and returns it. Kafka answers the requests of a connection in
// order, so the produce requests sent before it that are still pending (only
// requests expecting a response are pending) will never be answered: they
// complete with NoResponseLaterSeen, or NoResponseBytesLost when a gap in
// the responses may have held their answer.
func (c *Conn) answered(i int) pending {
	for _, p := range c.pending[:i] {
		if p.x == nil {
			c.unanswered(p)
			continue
		}
		p.x.NoResponse = NoResponseLaterSeen
		if p.lost {
			p.x.NoResponse = NoResponseBytesLost
		}
		c.d.emit(p.x)
	}
	p := c.pending[i]
	c.drop(i + 1)
	return p
}

// drop removes the n oldest pending requests.
func (c *Conn) drop(n int) {
	m := copy(c.pending, c.pending[n:])
	clear(c.pending[m:])
	c.pending = c.pending[:m]
}

// inFlight is the number of ProduceRequests sent on the connection and still
// awaiting their response, not counting the one being decoded.
func (c *Conn) inFlight() int {
	n := 0
	for i := range c.pending {
		if c.pending[i].x != nil {
			n++
		}
	}
	return n
}
