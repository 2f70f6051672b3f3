package gencap

// Timing model, in µs: loopback is a 10 Gbit/s link with a 40 µs round
// trip, Ethernet 1 Gbit/s with 300 µs.
func (g *generator) rtt() int64 {
	if g.loopback() {
		return 40
	}
	return 300
}

// txTime is how long n bytes take on the wire, at least 1 µs.
func (g *generator) txTime(n int) int64 {
	perMicro := 125
	if g.loopback() {
		perMicro = 1250
	}
	return max(1, int64(n/perMicro))
}

func (g *generator) mss() int { return g.cfg.MTU - 40 }

// between returns a pseudorandom value in [lo, hi].
func (g *generator) between(lo, hi int64) int64 { return lo + g.rng.Int64N(hi-lo+1) }

// control schedules a segment without payload.
func (g *generator) control(c *conn, fromClient bool, t int64, flags uint8) {
	s := &segment{tsMicros: t, flags: flags}
	if fromClient {
		s.src, s.dst, s.seq, s.ack, s.ipID = &c.client, c.p.broker, c.cSeq, c.bSeq, c.cIPID
		c.cIPID++
	} else {
		s.src, s.dst, s.seq, s.ack, s.ipID = c.p.broker, &c.client, c.bSeq, c.cSeq, c.bIPID
		c.bIPID++
	}
	if flags&flagACK == 0 {
		s.ack = 0 // a SYN acknowledges nothing
	}
	g.schedule(s)
}

// sendRaw schedules data cut into MSS-sized segments from t on and returns
// the time after the last one. Every RetransmitEvery-th data segment is
// scheduled twice: the copy has the same TCP sequence, flags and payload.
// send (tls.go) encrypts a frame first on a TLS connection.
func (g *generator) sendRaw(c *conn, fromClient bool, t int64, data []byte) int64 {
	mss := g.mss()
	for off := 0; off < len(data); off += mss {
		end := min(off+mss, len(data))
		flags := flagACK
		if end == len(data) {
			flags |= flagPSH
		}
		s := &segment{tsMicros: t, flags: flags, payload: data[off:end]}
		if fromClient {
			s.src, s.dst, s.seq, s.ack, s.ipID = &c.client, c.p.broker, c.cSeq, c.bSeq, c.cIPID
			c.cIPID++
			c.cSeq += uint32(end - off)
		} else {
			s.src, s.dst, s.seq, s.ack, s.ipID = c.p.broker, &c.client, c.bSeq, c.cSeq, c.bIPID
			c.bIPID++
			c.bSeq += uint32(end - off)
		}
		g.schedule(s)
		g.dataSegs++
		if g.cfg.RetransmitEvery > 0 && g.dataSegs%int64(g.cfg.RetransmitEvery) == 0 {
			dup := *s
			dup.tsMicros = t + 1
			if fromClient {
				dup.ipID = c.cIPID
				c.cIPID++
			} else {
				dup.ipID = c.bIPID
				c.bIPID++
			}
			g.schedule(&dup)
			g.man.Totals.RetransmittedSegments++
		}
		t += g.txTime(end - off)
	}
	return t
}

// openConn schedules the handshake and an ApiVersions exchange; with
// Config.TLS, the TLS handshake between them.
func (g *generator) openConn(c *conn) {
	t, rtt := c.next, g.rtt()
	c.cSeq, c.bSeq = g.rng.Uint32(), g.rng.Uint32()
	c.cIPID, c.bIPID = uint16(g.rng.Uint32()), uint16(g.rng.Uint32())
	if g.cfg.TLS {
		g.startTLS(c, t)
	}
	g.control(c, true, t, flagSYN)
	c.cSeq++
	g.control(c, false, t+rtt/2, flagSYN|flagACK)
	c.bSeq++
	g.control(c, true, t+rtt, flagACK)
	c.opened = true
	g.man.Totals.Connections++
	if c.tls != nil {
		t = g.tlsHandshake(c, t+rtt) - rtt
	}

	t = g.send(c, true, t+rtt+g.between(20, 200), apiVersionsRequest(c.p.format, c.nextCorr()))
	t = g.send(c, false, t+g.between(50, 300), apiVersionsResponse(c.corr-1))
	g.control(c, true, t+rtt/2, flagACK)
	c.next = t + rtt/2 + g.between(100, 2000)
}

// closeConn schedules the client's FIN, the broker's FIN and the last ACK
// from t on (on a TLS connection each side's close_notify first) and
// returns the time after them.
func (g *generator) closeConn(c *conn, t int64) int64 {
	rtt := g.rtt()
	if c.tls != nil {
		t = g.closeTLS(c, t)
	}
	g.control(c, true, t, flagFIN|flagACK)
	c.cSeq++
	g.control(c, false, t+rtt/2, flagFIN|flagACK)
	c.bSeq++
	g.control(c, true, t+rtt, flagACK)
	c.opened = false
	return t + rtt
}

// linger is the pause of a producer between two requests.
func (g *generator) linger() int64 { return g.between(200, 20000) }

// latency is how long the broker takes to answer with acks.
func (g *generator) latency(acks int16) int64 {
	if acks == 1 {
		return g.between(300, 3000)
	}
	return g.between(1000, 15000)
}

// newBatch builds the next batch of c's producer for part.
func (g *generator) newBatch(c *conn, part *partition, t int64) (batch []byte, spec batchSpec, err error) {
	p := c.p
	spec = batchSpec{
		codec:         p.codec,
		producerID:    p.producerID,
		producerEpoch: p.producerEpoch,
		baseSequence:  -1,
		records:       int32(g.between(minRecords, int64(g.maxRecords))),
		timestampMs:   t / 1000,
		withKeys:      p.withKeys,
	}
	if p.idempotent {
		spec.baseSequence = p.sequences[part.index]
		p.sequences[part.index] += spec.records
	}
	batch, err = g.builder.build(spec)
	if err != nil {
		return nil, spec, err
	}
	g.batchesSeen++
	if g.cfg.ResendEvery > 0 && g.batchesSeen%int64(g.cfg.ResendEvery) == 0 {
		g.resendsOwed++
	}
	return batch, spec, nil
}

// sendRequest schedules a produce request and the broker's ACK of it, and
// counts it; it returns the time after the request's last segment.
func (g *generator) sendRequest(c *conn, t int64, corr int32, batches []partitionBatch, records int32) int64 {
	p := c.p
	frame := produceRequest(p.format, p.version, p.acks, p.timeoutMillis, corr, batches)
	t = g.send(c, true, t, frame)
	g.control(c, false, t+g.rtt()/2, flagACK)
	tot := &g.man.Totals
	tot.ProduceRequests++
	tot.ProduceRequestsByVersion[p.version]++
	tot.Batches += int64(len(batches))
	tot.Records += int64(records)
	return t
}

// sendResponse schedules a produce response at t and the client's ACK of
// it, and returns the time after the ACK.
func (g *generator) sendResponse(c *conn, t int64, corr int32, answers []partitionAnswer) int64 {
	t = g.send(c, false, t, produceResponse(c.p.version, corr, answers))
	g.man.Totals.ProduceResponses++
	t += g.rtt() / 2
	g.control(c, true, t, flagACK)
	return t
}

// produceStep sends one ordinary produce request of 1..3 partitions, all
// appended, answered unless acks=0.
func (g *generator) produceStep(c *conn) error {
	t := c.next
	parts := c.p.parts
	n := min(1+g.rng.IntN(3), len(parts))
	first := g.rng.IntN(len(parts))
	batches := make([]partitionBatch, 0, n)
	answers := make([]partitionAnswer, 0, n)
	var records int32
	for i := 0; i < n; i++ {
		part := parts[(first+i)%len(parts)]
		batch, spec, err := g.newBatch(c, part, t)
		if err != nil {
			return err
		}
		batches = append(batches, partitionBatch{part: part, batch: batch})
		answers = append(answers, partitionAnswer{part: part, baseOffset: part.leo})
		part.leo += int64(spec.records)
		records += spec.records
	}
	corr := c.nextCorr()
	t = g.sendRequest(c, t, corr, batches, records)
	if c.p.acks != 0 {
		t = g.sendResponse(c, t+g.latency(c.p.acks), corr, answers)
	}
	c.next = t + g.linger()
	return nil
}
