package detect

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"

	"github.com/kdupcap/kdupcap/decode"
)

// finding builds the Finding of a batch sent more than once: attempts in the
// order they were sent, the cause of each resend, the verdict.
func (b *batch) finding(ends *connEnds) Finding {
	atts := make([]attempt, 0, 1+len(b.more))
	atts = append(atts, b.first)
	atts = append(atts, b.more...)
	slices.SortStableFunc(atts, func(x, y attempt) int { return compareAttempts(&x, &y) })
	scope := ScopeConnection
	if b.spans() {
		scope = ScopeClient
		for i := range atts {
			atts[i].showConn = true
		}
	}

	first := atts[0].conn
	f := Finding{
		Kind:          KindBatch,
		ConnID:        first.ID,
		Client:        first.Client,
		Broker:        first.Broker,
		ClientID:      atts[0].clientID,
		Topic:         b.topic,
		TopicID:       b.topicID,
		Partition:     b.partition,
		ProducerID:    b.producerID,
		ProducerEpoch: b.producerEpoch,
		FirstSequence: b.firstSequence,
		NumRecords:    b.numRecords,
		BatchCRC:      atts[0].crc,
		Magic:         b.magic,
		Idempotent:    b.idempotent(),
		Match:         MatchBytes,
		Scope:         scope,
		Proof:         ProofProduce,
		Attempts:      make([]Attempt, len(atts)),
	}
	responses := make([]Response, len(atts))
	for i := range atts {
		a := &atts[i]
		if a.crc != atts[0].crc || a.hash != atts[0].hash {
			f.Match = MatchSequence
		}
		out := &f.Attempts[i]
		*out = Attempt{
			ConnID:        a.conn.ID,
			Client:        a.conn.Client,
			Broker:        a.conn.Broker,
			CorrelationID: a.correlationID,
			Time:          fromUnixNano(a.reqTime),
			Version:       a.version,
			Acks:          a.acks,
			TimeoutMillis: a.timeoutMillis,
		}
		switch {
		case a.partResp:
			responses[i] = Response{
				Time:          fromUnixNano(a.respTime),
				ErrorCode:     a.errorCode,
				Error:         decode.ErrorName(a.errorCode),
				BaseOffset:    a.baseOffset,
				LogAppendTime: a.logAppendTime,
				LatencyMillis: millis(a.respTime - a.reqTime),
			}
			out.Response = &responses[i]
		case a.responded:
			out.NoResponse = NoResponsePartition
		case a.noResponse != "":
			out.NoResponse = a.noResponse
		default:
			out.NoResponse = NoResponseNotCaptured
		}
		if e, ok := ends.endOf(a); ok && endShown(e, atts, i) {
			out.End = &e
		}
		if i > 0 {
			out.Cause, out.CauseError = cause(&atts[i-1], a, ends)
			out.GapMillis = millis(a.reqTime - atts[i-1].reqTime)
		}
	}
	noun := "the batch"
	if b.records {
		noun = "these records"
	}
	f.Verdict, f.AppendedOffsets, f.Reason = verdict(atts, f.Idempotent, noun)
	if b.omitted > 0 {
		f.AttemptsOmitted = int(b.omitted)
		f.Reason += "; " + strconv.Itoa(int(b.omitted)) + " later attempts were not kept (more than " +
			strconv.Itoa(MaxAttempts) + " sent): their answers are not in this verdict"
	}
	return f
}

// compareAttempts orders attempts as they were sent: by send time, then
// correlation ID, then connection (correlation IDs are per connection).
func compareAttempts(x, y *attempt) int {
	if c := cmp.Compare(x.reqTime, y.reqTime); c != 0 {
		return c
	}
	if c := cmp.Compare(x.correlationID, y.correlationID); c != 0 {
		return c
	}
	return cmp.Compare(x.conn.ID, y.conn.ID)
}

// cause says why cur was sent, judged against the attempt sent before it.
// An acks=0 request is never answered, so no client waits on one or retries
// it: sending its bytes again is not a retry. An answer captured at the very
// instant cur was sent cannot have caused it (the client needs time to read
// it), so only an answer captured strictly before cur counts. Clients take
// DUPLICATE_SEQUENCE_NUMBER as success. An unanswered attempt whose
// connection closed (or showed a FIN or RST before cur, even if the other
// side never closed), followed by one on another connection, is judged by
// who ended that connection, when the capture shows it before cur (ends):
// the client (its own timeout), the broker's side (connection_closed), or
// nobody the capture saw (connection_closed, no end named). An answer
// followed at once by the broker's RST, then a send on another
// connection, is an answer the client never read (answer_lost).
func cause(prev, cur *attempt, ends *connEnds) (Cause, string) {
	end, ended := ends.endOf(prev)
	shown := ended && end.By != decode.EndByNone
	endAt := unixNano(end.Time)
	switch {
	case prev.acks == 0:
		return CauseNotARetry, ""
	case !prev.responded && prev.conn != cur.conn && (prev.noResponse == decode.NoResponseClosed || shown && endAt <= cur.reqTime):
		switch {
		case shown && endAt > cur.reqTime:
			// Sent again before the old connection ended: the client
			// gave up on the answer first.
			return CauseClientTimeout, ""
		case shown && end.By == decode.EndByClient:
			return CauseClientTimeout, end.String()
		case shown:
			return CauseConnectionClosed, end.String()
		}
		return CauseConnectionClosed, ""
	case !prev.responded || prev.respTime >= cur.reqTime:
		return CauseClientTimeout, ""
	case !prev.partResp:
		return CauseBrokerError, "no answer for the partition"
	case prev.errorCode == 0 || prev.errorCode == errDuplicateSequenceNumber:
		if shown && answerLost(prev, cur, end, endAt) {
			return CauseAnswerLost, end.String()
		}
		return CauseNotARetry, ""
	}
	return CauseBrokerError, decode.ErrorName(prev.errorCode)
}

// answerLost reports whether prev's answer was reset away before the
// client could read it: the broker reset prev's connection within
// AnswerLostWindow after the answer, and cur went out on another
// connection after the reset.
func answerLost(prev, cur *attempt, end decode.ConnEnd, endAt int64) bool {
	return prev.conn != cur.conn && end.By == decode.EndByBroker && end.How == decode.EndRST &&
		endAt >= prev.respTime && endAt-prev.respTime <= AnswerLostWindow && endAt <= cur.reqTime
}

// endShown reports whether the end e of attempt i's connection is part of
// what the finding shows: the end of an unanswered attempt's connection
// (why no answer came), or a FIN or RST before the next attempt was sent
// (what may have made the client send it) or just after the attempt's
// answer (an answer reset away: AnswerLostWindow). A connection that went
// on long after is not this finding's story; Span covers every end shown,
// so that the evidence written for a finding shows it too.
func endShown(e decode.ConnEnd, atts []attempt, i int) bool {
	a := &atts[i]
	at := unixNano(e.Time)
	switch {
	case !a.partResp:
		return true
	case e.By == decode.EndByNone:
		return false
	case i+1 < len(atts) && at <= atts[i+1].reqTime:
		return true
	}
	return at >= a.respTime && at-a.respTime <= AnswerLostWindow
}

func millis(ns int64) float64 { return float64(ns) / 1e6 }

// compareFindings orders findings by first attempt time, then connection,
// topic, partition, and the first correlation ID to break any tie.
func compareFindings(a, b Finding) int {
	var ta, tb int64
	var ca, cb int32
	if len(a.Attempts) > 0 {
		ta, ca = unixNano(a.Attempts[0].Time), a.Attempts[0].CorrelationID
	}
	if len(b.Attempts) > 0 {
		tb, cb = unixNano(b.Attempts[0].Time), b.Attempts[0].CorrelationID
	}
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ConnID, b.ConnID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	if c := cmp.Compare(ca, cb); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ProducerID, b.ProducerID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.FirstSequence, b.FirstSequence); c != 0 {
		return c
	}
	if c := cmp.Compare(a.BatchCRC, b.BatchCRC); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	var ra, rb uint64
	if len(a.Records) > 0 {
		ra = a.Records[0].Hash
	}
	if len(b.Records) > 0 {
		rb = b.Records[0].Hash
	}
	return cmp.Compare(ra, rb)
}
