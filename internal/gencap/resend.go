package gencap

import "encoding/binary"

// verdictFor is the verdict of the turn-th resend of idempotent or of
// non-idempotent producers: each kind cycles through three verdicts; an
// idempotent producer's resend is never duplicated, a non-idempotent one's
// never deduplicated.
func verdictFor(idempotent bool, turn int) string {
	switch turn % 3 {
	case 1:
		return VerdictSingle
	case 2:
		return VerdictUnconfirmed
	}
	if idempotent {
		return VerdictDeduplicated
	}
	return VerdictDuplicated
}

// resendStep sends one batch twice on c, with the broker's answers chosen
// to give the next verdict of the producer's kind, and records it in the
// manifest. c's producer has acks=all.
//
//   - duplicated: the first attempt is answered REQUEST_TIMED_OUT at offset
//     X after the request's timeout (appended, replication late); the retry
//     is answered with no error at a new offset Y.
//   - deduplicated: the same first answer; the retry is answered with no
//     error at X.
//   - single: the first attempt is answered NOT_LEADER_OR_FOLLOWER at -1;
//     the retry with no error at Y.
//   - unconfirmed: the retry gets no answer and the client closes the
//     connection. Alternately the first attempt was answered
//     REQUEST_TIMED_OUT at X (as in the seed capture), or not at all and the
//     client retried after its own timeout (nothing known appended).
func (g *generator) resendStep(c *conn) error {
	p := c.p
	t := c.next
	part := p.parts[g.rng.IntN(len(p.parts))]
	batch, spec, err := g.newBatch(c, part, t)
	if err != nil {
		return err
	}
	batches := []partitionBatch{{part: part, batch: batch}}
	class := 0
	if p.idempotent {
		class = 1
	}
	verdict := verdictFor(p.idempotent, g.verdictTurn[class])
	g.verdictTurn[class]++

	r := Resend{
		Client:        c.client.String(),
		Broker:        p.broker.String(),
		ClientID:      p.clientID,
		Topic:         part.topic,
		Partition:     part.id,
		APIVersion:    p.version,
		ProducerID:    spec.producerID,
		ProducerEpoch: spec.producerEpoch,
		BaseSequence:  spec.baseSequence,
		RecordCount:   spec.records,
		BatchCRC:      binary.BigEndian.Uint32(batch[17:21]),
		Idempotent:    p.idempotent,
		Verdict:       verdict,
	}
	answer := func(code int16, offset int64) partitionAnswer {
		return partitionAnswer{part: part, errorCode: code, baseOffset: offset}
	}
	appendNow := func() int64 {
		off := part.leo
		part.leo += int64(spec.records)
		return off
	}
	timeout := int64(p.timeoutMillis) * 1000
	backoff := func() int64 { return g.between(100000, 120000) } // retry.backoff.ms 100

	// First attempt.
	corr1 := c.nextCorr()
	t = g.sendRequest(c, t, corr1, batches, spec.records)
	var first *Response
	firstAnswered := true
	switch {
	case verdict == VerdictSingle:
		first = &Response{ErrorCode: errNotLeaderOrFollower, BaseOffset: -1}
		t = g.sendResponse(c, t+g.between(200, 1500), corr1, []partitionAnswer{answer(first.ErrorCode, first.BaseOffset)})
	case verdict == VerdictUnconfirmed && g.unconfirmedTurn%2 == 1:
		firstAnswered = false
		appendNow() // the broker may well have appended it; nothing says so
		t += timeout + g.between(0, 1000)
	default:
		first = &Response{ErrorCode: errRequestTimedOut, BaseOffset: appendNow()}
		t = g.sendResponse(c, t+timeout+g.between(0, 2000), corr1, []partitionAnswer{answer(first.ErrorCode, first.BaseOffset)})
	}
	if verdict == VerdictUnconfirmed {
		g.unconfirmedTurn++
	}
	if firstAnswered {
		t += backoff()
	}

	// The retry: the same batch bytes under a new correlation ID.
	corr2 := c.nextCorr()
	t = g.sendRequest(c, t, corr2, batches, spec.records)
	var second *Response
	switch verdict {
	case VerdictDuplicated, VerdictSingle:
		second = &Response{BaseOffset: appendNow()}
	case VerdictDeduplicated:
		second = &Response{BaseOffset: first.BaseOffset}
	case VerdictUnconfirmed:
		appendNow()
		c.closing = true
		c.next = t + timeout + g.between(0, 1000)
	}
	if second != nil {
		t = g.sendResponse(c, t+g.latency(p.acks), corr2, []partitionAnswer{answer(second.ErrorCode, second.BaseOffset)})
		c.next = t + g.linger()
	}

	r.CorrelationIDs = []int32{corr1, corr2}
	r.Attempts = []Attempt{{CorrelationID: corr1, Response: first}, {CorrelationID: corr2, Response: second, Cause: "client_timeout"}}
	if first != nil {
		r.Attempts[1].Cause, r.Attempts[1].CauseError = "broker_error", errorName(first.ErrorCode)
	}
	r.AppendedOffsets = []int64{}
	for _, a := range r.Attempts {
		if a.Response != nil && a.Response.BaseOffset >= 0 && !containsOffset(r.AppendedOffsets, a.Response.BaseOffset) {
			r.AppendedOffsets = append(r.AppendedOffsets, a.Response.BaseOffset)
		}
	}
	g.man.Resends = append(g.man.Resends, r)
	g.man.Totals.Resends++
	g.man.Totals.Verdicts[verdict]++
	return nil
}

func containsOffset(offsets []int64, off int64) bool {
	for _, o := range offsets {
		if o == off {
			return true
		}
	}
	return false
}
