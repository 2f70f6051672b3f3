package profile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// Errors answered after the batch was appended: a re-send appends it again
// unless the producer is idempotent.
var afterAppend = []string{"REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"}

// Errors answered when the partition's leader moved: refused before the
// append.
var leaderMoved = []string{"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"}

// Diagnose says in plain words why producer p re-sent, what that did to the
// log, and which setting would have prevented it, in the words of its
// client's documentation (the client it names in ApiVersions, or the one
// its client.id suggests, said to be a guess); each statement quotes
// numbers of the capture held in p, and none is said twice. It is empty for
// a producer with nothing to diagnose: no re-send, no acks=0 and no
// retriable error left unretried.
func Diagnose(p *Producer) string {
	acks0 := slices.Contains(p.Acks, 0)
	if p.Resends == 0 && !acks0 && len(p.Unretried) == 0 && p.Renumbered == 0 {
		return ""
	}
	names, guessed := clientOf(p)
	var out []string
	say := func(format string, args ...any) {
		if t := fmt.Sprintf(format, args...); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	timeout := int32(-1)
	if n := len(p.TimeoutsMillis); n > 0 {
		timeout = p.TimeoutsMillis[n-1]
	}
	lat := &p.Overall
	dup, unconfirmed, dedup := p.ByVerdict[detect.Duplicated], p.ByVerdict[detect.Unconfirmed], p.ByVerdict[detect.Deduplicated]
	// harmless: every re-send of an idempotent producer was deduplicated
	// or refused, none is in the log twice and none may be.
	harmless := p.Idempotent && p.Resends > 0 && dup == 0 && unconfirmed == 0 && p.Renumbered == 0

	// What happened.
	head := producerName(p) + " (" + settingsText(p) + "): "
	if p.Resends > 0 {
		head += fmt.Sprintf("%d of %d batches re-sent", p.Resent, p.Batches)
		if p.Resends != p.Resent {
			head += fmt.Sprintf(" (%s)", countText(p.Resends, "re-send"))
		}
		switch {
		case dup > 0 && p.MostCopies > 2:
			head += fmt.Sprintf(", %d written more than once (up to %d times)", dup, p.MostCopies)
		case dup > 0:
			head += fmt.Sprintf(", %d written twice", dup)
		case unconfirmed == 0:
			head += ", none written twice"
		}
		if dedup > 0 {
			head += fmt.Sprintf(", %d deduplicated by the broker", dedup)
		}
		if unconfirmed > 0 {
			head += fmt.Sprintf(", %d unconfirmed (the capture does not show how many copies the log holds)", unconfirmed)
		}
	} else {
		head += fmt.Sprintf("%s, none re-sent", countText(p.Batches, "batch"))
	}
	say("%s.", head)
	if guessed {
		say("If this is %s, as %s suggest (it sent no software name), the settings named below are %s.", names.name, p.InferredFrom, possessive(names.name))
	}

	// Why, cause by cause, and what would have avoided it.
	var fixes []string
	brokerSide := false
	onlyAnswerLost := len(p.Causes) > 0
	for _, c := range p.Causes {
		onlyAnswerLost = onlyAnswerLost && c.Cause == detect.CauseAnswerLost
	}
	for _, c := range p.Causes {
		switch {
		case c.Cause == detect.CauseBrokerError && slices.Contains(afterAppend, c.Error):
			say("%s", afterAppendText(c, timeout, lat))
			if c.Error == "REQUEST_TIMED_OUT" && (lat.Succeeded == 0 || float64(timeout) < lat.SucceededP99Millis) {
				fixes = append(fixes, timeoutFix(names.brokerTimeout, lat))
			}
		case c.Cause == detect.CauseBrokerError && slices.Contains(leaderMoved, c.Error):
			say("%s followed %s: the partition's leader moved, and a broker refuses such a request before the append, so these re-sends alone write nothing twice.",
				countText(c.Count, "re-send"), c.Error)
		case c.Cause == detect.CauseBrokerError:
			say("%s followed %s.", countText(c.Count, "re-send"), c.Error)
		case c.Cause == detect.CauseClientTimeout:
			t, fix := clientTimeoutText(c, names, lat)
			say("%s.", t)
			if fix != "" {
				fixes = append(fixes, fix)
			}
		case c.Cause == detect.CauseConnectionClosed:
			t, broker := connectionClosedText(c)
			say("%s.", t)
			brokerSide = brokerSide || broker
		case c.Cause == detect.CauseAnswerLost:
			t := fmt.Sprintf("%s followed an answer the broker reset away", countText(c.Count, "re-send"))
			if c.Ended > 0 {
				t += " " + rangeText(c.MinEndMillis, c.MaxEndMillis) + " later"
			}
			t += " (the client never read it)"
			if harmless && dedup > 0 && onlyAnswerLost {
				t += ", and the broker deduplicated them"
			}
			say("%s.", t)
			brokerSide = true
		case c.Cause == detect.CauseNotARetry:
			say("%s repeated a batch already acknowledged (or sent with acks=0): the application or the client sent it again, which no retry setting prevents.",
				countText(c.Count, "send"))
		}
	}
	if brokerSide {
		say("Look at the broker's side at those times: its logs, and what closes connections in front of it (connections.max.idle.ms on the broker, a load balancer's or proxy's idle timeout).")
	}
	if p.Idempotent && p.Renumbered > 0 {
		say("%s", renumberedText(p, dup))
		if names.renumber != "" {
			say("%s.", upperFirst(names.renumber))
		} else {
			say("A transactional producer (%s) with read_committed consumers hides the copies of aborted sends; client timeouts above the broker's slowest answers avoid the re-sends.", names.transactional)
		}
	}
	if !p.Idempotent && p.MaxInFlight > 1 && p.Resends > 0 && names.inFlight != "" {
		order := names.inFlight + "=1"
		if names.idempotence != "" {
			order += " or idempotence"
		}
		say("With %d requests in flight at once and no idempotence, a re-sent batch can also land after later ones; %s keeps the order.", p.MaxInFlight, order)
	}
	for _, u := range p.Unretried {
		t := fmt.Sprintf("%s answered %s %s never sent again: %s look disabled (0) or ran out", countText(u.Count, "batch"), u.Error,
			map[bool]string{true: "was", false: "were"}[u.Count == 1], names.retries)
		if slices.Contains(afterAppend, u.Error) {
			t += "; the broker answers " + u.Error + " after the append, so the log may hold what the application was told failed"
		}
		say("%s.", t)
	}
	if acks0 {
		if names.idempotence != "" {
			say("With acks=0 the broker answers nothing: the client never re-sends and never learns of a lost write; %s with %s delivers without loss or duplicates.",
				names.acksAll, names.idempotence)
		} else {
			say("With acks=0 the broker answers nothing: the client never re-sends and never learns of a lost write; %s makes it answer (%s has no idempotent producer, so a re-send can then write a batch twice).",
				names.acksAll, names.name)
		}
	}

	// The remedy: idempotence first, then the timeouts.
	switch {
	case !p.Idempotent && (dup > 0 || unconfirmed > 0) && names.idempotence != "":
		fixes = append([]string{"with " + names.idempotence + " these re-sends would have been harmless"}, fixes...)
	case !p.Idempotent && (dup > 0 || unconfirmed > 0):
		fixes = append([]string{names.name + " has no idempotent producer, so each re-send can write a batch twice"}, fixes...)
	case harmless && !(dedup > 0 && onlyAnswerLost):
		fixes = append([]string{"idempotence made these re-sends harmless"}, fixes...)
	}
	if len(fixes) > 0 {
		var uniq []string
		for _, f := range fixes {
			if !slices.Contains(uniq, f) {
				uniq = append(uniq, f)
			}
		}
		say("%s.", upperFirst(strings.Join(uniq, "; ")))
	}
	return strings.Join(out, " ")
}

// clientOf is the settings of p's client: the one it named in ApiVersions,
// else the one its client.id and API versions suggest (guessed true), else
// generic names.
func clientOf(p *Producer) (names clientSettings, guessed bool) {
	if p.SoftwareName != "" {
		return settingsFor(p.SoftwareName), false
	}
	if p.SoftwareGuess != "" {
		if c := settingsFor(p.SoftwareGuess); c.name != genericSettings.name {
			return c, true
		}
	}
	return genericSettings, false
}

// clientTimeoutText explains re-sends sent before any answer to the
// attempt before, after the client's own timeout, and gives the fix the
// latency supports ("" when it supports none).
func clientTimeoutText(c CauseCount, names clientSettings, lat *BrokerLatency) (text, fix string) {
	if strings.HasPrefix(c.Error, string(decode.EndByClient)+" ") {
		text = fmt.Sprintf("%s went out on a new connection %s after the attempt before: the client ended the old connection (%s)",
			countText(c.Count, "re-send"), gapText(c), c.Error)
		if c.Ended > 0 {
			text += " " + rangeText(c.MinEndMillis, c.MaxEndMillis) + " after the request"
		}
		text += " with no answer captured"
		switch {
		case names.closesOnTimeout:
			text += ", after its own timeout (" + names.clientTimeout + ")"
		case names.name != genericSettings.name:
			// A client that keeps connections open on a timeout closed
			// this one for another reason.
			text += "; " + names.closes + ", so something else made it close the connection"
		}
	} else {
		text = fmt.Sprintf("%s went out %s after the attempt before with no answer captured: the client's own timeout (%s) expired",
			countText(c.Count, "re-send"), gapText(c), names.clientTimeout)
	}
	if lat.Answered == 0 {
		return text, ""
	}
	if lat.MaxMillis < c.MinGapMillis {
		return text + fmt.Sprintf(", although the broker answered every other request captured within %s ms: these got no answer at all", msText(lat.MaxMillis)), ""
	}
	text += fmt.Sprintf(", below the broker's slowest answers (p99 %s ms, max %s ms)", msText(lat.P99Millis), msText(lat.MaxMillis))
	if lat.P99Millis > c.MinGapMillis {
		return text, fmt.Sprintf("raising %s above the broker's p99 latency (%s ms) would have avoided the re-sends after the client's timeout", names.clientTimeout, msText(lat.P99Millis))
	}
	return text, fmt.Sprintf("raising %s above the broker's slowest answers (%s ms) would have avoided the re-sends after the client's timeout", names.clientTimeout, msText(lat.MaxMillis))
}

// connectionClosedText explains re-sends on a new connection after the
// attempt before's connection ended unanswered by the broker's side or
// with no end captured; broker is true when the broker's side ended it.
func connectionClosedText(c CauseCount) (text string, broker bool) {
	n := countText(c.Count, "re-send")
	switch {
	case strings.HasPrefix(c.Error, string(decode.EndByBroker)+" "):
		what := "closed"
		if strings.HasSuffix(c.Error, "RST") {
			what = "reset"
		}
		if c.Ended > 0 {
			return fmt.Sprintf("%s followed the broker's side: it %s the connection (%s) %s after the request with no answer captured, and the client re-sent %s after that (%s after the attempt before): not the client's timeout",
				n, what, c.Error, rangeText(c.MinEndMillis, c.MaxEndMillis), rangeText(c.MinAfterEndMillis, c.MaxAfterEndMillis), gapText(c)), true
		}
		return fmt.Sprintf("%s followed the broker's side: it %s the connection (%s) with no answer captured, and the client re-sent %s after the attempt before: not the client's timeout",
			n, what, c.Error, gapText(c)), true
	case c.Error == "":
		return fmt.Sprintf("%s went out on a new connection %s after the attempt before, whose connection ended with no answer captured; the capture shows no FIN or RST of it, so it does not show who closed it",
			n, gapText(c)), false
	}
	return fmt.Sprintf("%s went out on a new connection %s after the attempt before, whose connection ended (%s) with no answer captured", n, gapText(c), c.Error), false
}

// renumberedText says that idempotent producer p sent records again under
// another epoch or producer ID, which the broker cannot deduplicate.
func renumberedText(p *Producer, dup int64) string {
	how := "under another epoch or producer ID"
	who := "the producer"
	if len(p.Changes) > 0 {
		ch := p.Changes[0]
		after := causeText(ch.Cause, ch.Error)
		switch ch.Change {
		case detect.ProducerChangeEpoch:
			how = fmt.Sprintf("under a new epoch (epoch %d -> %d of producer ID %d)", ch.Epoch, ch.ToEpoch, ch.ProducerID)
		case detect.ProducerChangeID:
			// No client re-sends its own batch under a new producer ID:
			// another instance of the producer (a restart, the
			// application giving up on the first) sent them.
			who = "a new producer of the same client (another instance: a restart, or the application giving up on the first)"
			how = fmt.Sprintf("under a new producer ID (%d -> %d)", ch.ProducerID, ch.ToProducerID)
			if ch.Cause == detect.CauseClientTimeout {
				after = ""
				how += " before the first attempt was answered"
			}
		}
		if after != "" {
			how += " after " + after
		}
		if len(p.Changes) > 1 {
			how += fmt.Sprintf(", and %s", countText(int64(len(p.Changes)-1), "other change"))
		}
	}
	var dupChanged int64
	for _, ch := range p.Changes {
		dupChanged += ch.Duplicated
	}
	what := "the records of " + countText(p.Renumbered, "batch")
	if dupChanged > 0 || dup > 0 {
		return fmt.Sprintf("Idempotence is on, yet the log holds records twice: %s sent %s again %s, and the broker deduplicates only within one producer ID and epoch.", who, what, how)
	}
	return fmt.Sprintf("Idempotence is on, yet %s sent %s again %s: the broker deduplicates only within one producer ID and epoch, so the log may hold them twice.", who, what, how)
}

// causeText names a cause of a re-send as a person would, "" for none.
func causeText(c detect.Cause, errName string) string {
	t := ""
	switch c {
	case detect.CauseClientTimeout:
		t = "the client's own timeout"
	case detect.CauseBrokerError:
		return errName
	case detect.CauseConnectionClosed:
		t = "the connection closed"
	case detect.CauseAnswerLost:
		return "an answer lost to a broker reset (" + errName + ")"
	case detect.CauseNotARetry:
		return "a send already acknowledged"
	default:
		return ""
	}
	if errName != "" {
		t += " (" + errName + ")"
	}
	return t
}

// possessive is "kafkajs's", "the Java client's".
func possessive(name string) string { return name + "'s" }

// upperFirst makes the first byte of s upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// afterAppendText explains re-sends that followed an error the broker
// answers after the append.
func afterAppendText(c CauseCount, timeout int32, lat *BrokerLatency) string {
	n := countText(c.Count, "time")
	if c.Count == 1 {
		n = "once"
	}
	if c.Error != "REQUEST_TIMED_OUT" {
		return fmt.Sprintf("The broker answered %s %s after appending the batch (too few replicas in sync), so each re-send appended it again.", c.Error, n)
	}
	to := strconv.Itoa(int(timeout)) + " ms"
	switch {
	case lat.Succeeded == 0:
		return fmt.Sprintf("The broker answered REQUEST_TIMED_OUT %s, after appending the batch, and answered no request of this producer without error: its replication latency is above the %s timeout.", n, to)
	case float64(timeout) < lat.SucceededP50Millis:
		return fmt.Sprintf("The broker answered REQUEST_TIMED_OUT %s, after appending the batch, because the %s timeout is below its replication latency (p50 %s ms, p99 %s ms).",
			n, to, msText(lat.SucceededP50Millis), msText(lat.SucceededP99Millis))
	case float64(timeout) < lat.SucceededP99Millis:
		return fmt.Sprintf("The broker answered REQUEST_TIMED_OUT %s, after appending the batch: the %s timeout is above its usual replication latency (p50 %s ms) but below its slowest (p99 %s ms).",
			n, to, msText(lat.SucceededP50Millis), msText(lat.SucceededP99Millis))
	}
	return fmt.Sprintf("The broker answered REQUEST_TIMED_OUT %s, after appending the batch, although its answers without error took p99 %s ms, within the %s timeout: replication stalled at those moments.",
		n, msText(lat.SucceededP99Millis), to)
}

// timeoutFix advises a broker-side timeout above the observed latency.
func timeoutFix(setting string, lat *BrokerLatency) string {
	if lat.Succeeded == 0 {
		return "raising " + setting + " above the broker's replication latency would have avoided the REQUEST_TIMED_OUT answers"
	}
	return fmt.Sprintf("raising %s above the p99 latency (%s ms) would have avoided the REQUEST_TIMED_OUT answers", setting, msText(lat.SucceededP99Millis))
}

// producerName names p: its software (from ApiVersions), address and
// client.id.
func producerName(p *Producer) string {
	name := "producer"
	if p.SoftwareName != "" {
		name = SoftwareText(p)
	}
	name += " at " + p.ClientIP.String()
	if p.ClientID != nil {
		name += ", client.id " + strconv.Quote(*p.ClientID)
	}
	return name
}

// settingsText lists the settings read off the wire.
func settingsText(p *Producer) string {
	var parts []string
	if len(p.Acks) > 0 {
		parts = append(parts, "acks="+p.AcksText())
	}
	if len(p.TimeoutsMillis) > 0 {
		t := make([]string, len(p.TimeoutsMillis))
		for i, v := range p.TimeoutsMillis {
			t[i] = strconv.Itoa(int(v))
		}
		parts = append(parts, "timeout "+strings.Join(t, "/")+" ms")
	}
	if p.Idempotent {
		parts = append(parts, fmt.Sprintf("idempotent, producer id %d", p.ProducerID))
	} else {
		parts = append(parts, "not idempotent")
	}
	for _, id := range p.TransactionalIDs {
		parts = append(parts, "transactional.id "+strconv.Quote(id))
	}
	if p.MaxInFlight > 0 {
		parts = append(parts, fmt.Sprintf("max in flight %d", p.MaxInFlight))
	}
	return strings.Join(parts, ", ")
}

// gapText is the time range of a cause's re-sends after the attempt before.
func gapText(c CauseCount) string { return rangeText(c.MinGapMillis, c.MaxGapMillis) }

// rangeText is "30000 ms" or "30000-30100 ms".
func rangeText(lo, hi float64) string {
	a, b := msText(lo), msText(hi)
	if a == b {
		return a + " ms"
	}
	return a + "-" + b + " ms"
}

// SoftwareText names p's client software as it named itself, with the
// librdkafka version a librdkafka wrapper carries: "kgo v1.22.3",
// "confluent-kafka-go (librdkafka 2.11.1)", "confluent-kafka-python 2.11.0
// (librdkafka 2.11.0)"; empty when p sent no software name.
func SoftwareText(p *Producer) string {
	if p.SoftwareName == "" {
		return ""
	}
	v, lv := p.SoftwareVersion, p.LibrdkafkaVersion
	if lv == "" || settingsFor(p.SoftwareName).name == librdkafkaSettings.name {
		return strings.TrimSpace(p.SoftwareName + " " + v)
	}
	v = strings.TrimSuffix(strings.TrimSuffix(v, lv), "-rdkafka-")
	return strings.TrimSpace(p.SoftwareName+" "+v) + " (librdkafka " + lv + ")"
}

// msText prints milliseconds with the precision a person reads: whole above
// 100, one decimal above 1, two below.
func msText(v float64) string {
	prec := 2
	switch {
	case v >= 100:
		prec = 0
	case v >= 1:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// countText is "1 noun" or "n nouns" (batch: batches).
func countText(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") {
		return strconv.FormatInt(n, 10) + " " + noun + "es"
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
