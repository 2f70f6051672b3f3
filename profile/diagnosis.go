package profile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kdupcap/kdupcap/detect"
)

// clientSettings names a client's own settings, so that a diagnosis says
// what to change in the words of the client's documentation.
type clientSettings struct {
	idempotence   string // turns idempotence on
	brokerTimeout string // sent as the request's timeout
	clientTimeout string // how long the client waits for an answer
	closes        string // who closes a connection with requests unanswered
	inFlight      string // max requests in flight per connection
	retries       string
}

// settingsFor returns the setting names of the client software name (from
// ApiVersions), generic names when it is not known.
func settingsFor(software string) clientSettings {
	s := strings.ToLower(software)
	switch {
	case strings.Contains(s, "rdkafka") || strings.Contains(s, "confluent-kafka"):
		return clientSettings{
			idempotence:   "enable.idempotence=true",
			brokerTimeout: "request.timeout.ms",
			clientTimeout: "socket.timeout.ms",
			closes:        "librdkafka closes a connection whose request got no answer within socket.timeout.ms",
			inFlight:      "max.in.flight.requests.per.connection",
			retries:       "retries",
		}
	case strings.Contains(s, "apache-kafka-java"):
		return clientSettings{
			idempotence:   "enable.idempotence=true",
			brokerTimeout: "request.timeout.ms",
			clientTimeout: "request.timeout.ms (with delivery.timeout.ms above it)",
			closes:        "the Java client closes a connection whose request got no answer within request.timeout.ms",
			inFlight:      "max.in.flight.requests.per.connection",
			retries:       "retries",
		}
	case s == "kgo" || strings.Contains(s, "franz-go"):
		return clientSettings{
			idempotence:   "idempotent writes (without kgo.DisableIdempotentWrite)",
			brokerTimeout: "kgo.ProduceRequestTimeout",
			clientTimeout: "kgo.ProduceRequestTimeout plus kgo.RequestTimeoutOverhead",
			closes:        "kgo closes a connection whose request got no answer within kgo.ProduceRequestTimeout plus kgo.RequestTimeoutOverhead",
			inFlight:      "kgo.MaxProduceRequestsInflightPerBroker",
			retries:       "kgo.RecordRetries",
		}
	}
	return clientSettings{
		idempotence:   "idempotence (enable.idempotence=true in most clients)",
		brokerTimeout: "the request timeout",
		clientTimeout: "the client's own request timeout",
		closes:        "the client closes a connection after its own request timeout, or the broker closed it",
		inFlight:      "max in flight",
		retries:       "retries",
	}
}

// Errors answered after the batch was appended: a re-send appends it again
// unless the producer is idempotent.
var afterAppend = []string{"REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"}

// Errors answered when the partition's leader moved: refused before the
// append.
var leaderMoved = []string{"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"}

// Diagnose says in plain words why producer p re-sent, what that did to the
// log, and which setting would have prevented it; each statement quotes
// numbers of the capture held in p. It is empty for a producer with nothing
// to diagnose: no re-send, no acks=0 and no retriable error left unretried.
func Diagnose(p *Producer) string {
	acks0 := slices.Contains(p.Acks, 0)
	if p.Resends == 0 && !acks0 && len(p.Unretried) == 0 {
		return ""
	}
	names := settingsFor(p.SoftwareName)
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	timeout := int32(-1)
	if n := len(p.TimeoutsMillis); n > 0 {
		timeout = p.TimeoutsMillis[n-1]
	}
	lat := &p.Overall
	dup, unconfirmed, dedup := p.ByVerdict[detect.Duplicated], p.ByVerdict[detect.Unconfirmed], p.ByVerdict[detect.Deduplicated]

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

	// Why, cause by cause, and what would have avoided it.
	var fixes []string
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
			t := fmt.Sprintf("%s went out %s after the attempt before with no answer captured: the client's own timeout (%s) expired",
				countText(c.Count, "re-send"), gapText(c), names.clientTimeout)
			if lat.Answered > 0 {
				t += fmt.Sprintf(", below the broker's slowest answers (p99 %s ms, max %s ms)", msText(lat.P99Millis), msText(lat.MaxMillis))
			}
			say("%s.", t)
			fixes = append(fixes, fmt.Sprintf("raising %s above the broker's p99 latency would have avoided them", names.clientTimeout))
		case c.Cause == detect.CauseConnectionClosed:
			say("%s went out on a new connection %s after the attempt before, whose connection closed with no answer captured (%s).",
				countText(c.Count, "re-send"), gapText(c), names.closes)
		case c.Cause == detect.CauseNotARetry:
			say("%s repeated a batch already acknowledged (or sent with acks=0): the application or the client sent it again, which no retry setting prevents.",
				countText(c.Count, "send"))
		}
	}
	if !p.Idempotent && p.MaxInFlight > 1 && p.Resends > 0 {
		say("With %d requests in flight at once and no idempotence, a re-sent batch can also land after later ones; %s=1 or idempotence keeps the order.",
			p.MaxInFlight, names.inFlight)
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
		say("With acks=0 the broker answers nothing: the client never re-sends and never learns of a lost write; acks=all with %s delivers without loss or duplicates.",
			names.idempotence)
	}

	// The remedy: idempotence first, then the timeouts.
	switch {
	case !p.Idempotent && (dup > 0 || unconfirmed > 0):
		fixes = append([]string{"with " + names.idempotence + " these re-sends would have been harmless"}, fixes...)
	case p.Idempotent && p.Resends > 0 && dup == 0:
		fixes = append([]string{"idempotence made these re-sends harmless"}, fixes...)
	}
	if len(fixes) > 0 {
		fixes = slices.Compact(fixes)
		f := strings.Join(fixes, "; ")
		say("%s.", strings.ToUpper(f[:1])+f[1:])
	}
	return strings.Join(out, " ")
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
		return "raising " + setting + " above the broker's replication latency would have avoided them"
	}
	return fmt.Sprintf("raising %s above the p99 latency (%s ms) would have avoided them", setting, msText(lat.SucceededP99Millis))
}

// producerName names p: its software (from ApiVersions), address and
// client.id.
func producerName(p *Producer) string {
	name := "producer"
	if p.SoftwareName != "" {
		name = strings.TrimSpace(p.SoftwareName + " " + p.SoftwareVersion)
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
func gapText(c CauseCount) string {
	lo, hi := msText(c.MinGapMillis), msText(c.MaxGapMillis)
	if lo == hi {
		return lo + " ms"
	}
	return lo + "-" + hi + " ms"
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
