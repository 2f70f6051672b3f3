package detect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kdupcap/kdupcap/decode"
)

// Error codes that decide what an answer says about the log.
const (
	errRequestTimedOut              = 7
	errNotEnoughReplicasAfterAppend = 20
	errDuplicateSequenceNumber      = 46
)

// outcome is what one answer shows of the log.
type outcome uint8

const (
	outUnknown  outcome = iota // no answer, or an answer that cannot tell
	outAppended                // the leader appended the batch at baseOffset
	outDedup                   // DUPLICATE_SEQUENCE_NUMBER: already in the log
	outRejected                // an error before the append
)

// classify says what the answer to a shows. NONE, and REQUEST_TIMED_OUT or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND carrying an offset, mean appended (the
// leader appends before it waits for replication).
func classify(a *attempt) outcome {
	if !a.partResp {
		return outUnknown
	}
	switch a.errorCode {
	case 0, errRequestTimedOut, errNotEnoughReplicasAfterAppend:
		if a.baseOffset >= 0 {
			return outAppended
		}
		return outUnknown
	case errDuplicateSequenceNumber:
		return outDedup
	}
	return outRejected
}

// verdict decides what the log holds of a batch from its attempts, sorted in
// send order, and explains it in one sentence.
// noun names what was sent: "the batch", or "these records".
func verdict(atts []attempt, idempotent bool, noun string) (Verdict, []int64, string) {
	outs := make([]outcome, len(atts))
	offsets := []int64{}
	var appended, unknown, rejected []int
	for i := range atts {
		outs[i] = classify(&atts[i])
		switch outs[i] {
		case outAppended:
			appended = append(appended, i)
			if !slices.Contains(offsets, atts[i].baseOffset) {
				offsets = append(offsets, atts[i].baseOffset)
			}
		case outUnknown:
			unknown = append(unknown, i)
		case outRejected:
			rejected = append(rejected, i)
		}
	}
	slices.Sort(offsets)

	if len(offsets) >= 2 {
		held := times(len(offsets))
		if len(unknown) > 0 {
			held = "at least " + held + " (" + unknowns(atts, unknown) + ")"
		}
		return Duplicated, offsets, attemptList(atts, appended) + " were appended at offsets " +
			joinInts(offsets) + ": the log holds " + noun + " " + held
	}

	if idempotent {
		for j := range atts {
			if outs[j] == outDedup {
				return Deduplicated, offsets, "attempt " + corr(&atts[j]) +
					" was answered DUPLICATE_SEQUENCE_NUMBER: the broker already held this sequence and did not append it again"
			}
			if outs[j] != outAppended {
				continue
			}
			// A log never holds two batches at one base offset: a later
			// answer at an earlier append's offset (NONE, or an error that
			// carries the offset) is the broker returning the original.
			for i := range j {
				if outs[i] == outAppended && atts[i].baseOffset == atts[j].baseOffset {
					answered := "with no error"
					if atts[j].errorCode != 0 {
						answered = decode.ErrorName(atts[j].errorCode)
					}
					return Deduplicated, offsets, "attempt " + corr(&atts[j]) +
						" was answered " + answered + " at offset " + strconv.FormatInt(atts[j].baseOffset, 10) +
						", where attempt " + corr(&atts[i]) +
						" was appended: the broker deduplicated the resend of the same sequence"
				}
			}
		}
	}

	if len(appended) == 1 && len(rejected) == len(atts)-1 {
		return Single, offsets, "only attempt " + corr(&atts[appended[0]]) + " was appended (offset " +
			strconv.FormatInt(offsets[0], 10) + "); " + rejections(atts, rejected) + ": the log holds " + noun + " once"
	}

	var b strings.Builder
	most := len(offsets) + len(unknown) // copies the log may hold
	switch {
	case len(unknown) > 0:
		b.WriteString(unknowns(atts, unknown))
	case len(appended) == 0 && len(rejected) == len(atts):
		b.WriteString("every attempt was rejected (")
		b.WriteString(rejectionCodes(atts, rejected))
		b.WriteString("): the log does not hold " + noun)
		return Rejected, offsets, b.String()
	case len(appended) >= 2:
		b.WriteString(attemptList(atts, appended))
		b.WriteString(" were answered at the same offset ")
		b.WriteString(strconv.FormatInt(offsets[0], 10))
		b.WriteString(", which does not show whether the broker appended " + noun + " again")
		most = len(appended) + len(unknown)
	default:
		b.WriteString("the answers do not show how many times " + noun + " " + wasWere(noun) + " appended")
	}
	switch {
	case most <= 1:
		b.WriteString("; the log holds " + noun + " at most once")
	case idempotent:
		b.WriteString("; idempotent producer: the broker deduplicates a resend of the same sequence")
	default:
		b.WriteString("; producer not idempotent: the log may hold " + noun + " " + times(most))
	}
	return Unconfirmed, offsets, b.String()
}

// unknowns describes the attempts whose answers cannot tell.
func unknowns(atts []attempt, idx []int) string {
	var silent, unacked []int
	var parts []string
	for _, i := range idx {
		a := &atts[i]
		switch {
		case a.acks == 0 && !a.responded:
			unacked = append(unacked, i)
		case !a.responded:
			silent = append(silent, i)
		case !a.partResp:
			parts = append(parts, "the response to attempt "+corr(a)+" did not name the partition")
		default:
			parts = append(parts, "attempt "+corr(a)+" was answered "+decode.ErrorName(a.errorCode)+" without a base offset")
		}
	}
	switch len(silent) {
	case 0:
	case 1:
		parts = append([]string{"attempt " + corr(&atts[silent[0]]) + " has no response in the capture"}, parts...)
	default:
		parts = append([]string{attemptList(atts, silent) + " have no response in the capture"}, parts...)
	}
	switch len(unacked) {
	case 0:
	case 1:
		parts = append([]string{"attempt " + corr(&atts[unacked[0]]) + " was sent with acks=0, which the broker never answers"}, parts...)
	default:
		parts = append([]string{attemptList(atts, unacked) + " were sent with acks=0, which the broker never answers"}, parts...)
	}
	return strings.Join(parts, ", ")
}

// rejections names the rejected attempts and their errors.
func rejections(atts []attempt, idx []int) string {
	if len(idx) == 1 {
		a := &atts[idx[0]]
		return "attempt " + corr(a) + " was rejected with " + decode.ErrorName(a.errorCode)
	}
	return "the others were rejected (" + rejectionCodes(atts, idx) + ")"
}

func rejectionCodes(atts []attempt, idx []int) string {
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = corr(&atts[i]) + ": " + decode.ErrorName(atts[i].errorCode)
	}
	return strings.Join(parts, ", ")
}

// attemptList is "attempts 6 and 7" or "attempts 6, 7 and 8".
func attemptList(atts []attempt, idx []int) string {
	ids := make([]string, len(idx))
	for k, i := range idx {
		ids[k] = corr(&atts[i])
	}
	return "attempts " + joinAnd(ids)
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return joinAnd(s)
}

func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// corr names an attempt by its correlation ID, and by its connection too
// when the finding spans connections (correlation IDs are per connection).
func corr(a *attempt) string {
	if a.showConn && a.conn != nil {
		return strconv.Itoa(int(a.correlationID)) + " (connection " + strconv.FormatUint(a.conn.ID, 10) + ")"
	}
	return strconv.Itoa(int(a.correlationID))
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// wasWere agrees a verb with noun.
func wasWere(noun string) string {
	if strings.HasPrefix(noun, "these ") {
		return "were"
	}
	return "was"
}
