package emit

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseURL reads an --emit target, kafka://HOST:PORT[,HOST:PORT...]/TOPIC,
// into the seed brokers ("HOST:PORT", an IPv6 host in brackets) and the
// topic. The port is required; the topic must be a legal Kafka topic name
// (1 to 249 of a-z A-Z 0-9 . _ -, not "." or ".."). Anything else (another
// scheme, user info, a query, a fragment, a path below the topic) is an
// error that says what is wrong.
func ParseURL(s string) (seeds []string, topic string, err error) {
	fail := func(format string, args ...any) ([]string, string, error) {
		return nil, "", fmt.Errorf("report: emit URL %q: "+format+" (want kafka://HOST:PORT[,HOST:PORT]/TOPIC)", append([]any{s}, args...)...)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return fail("no scheme")
	}
	if !strings.EqualFold(scheme, "kafka") {
		return fail("scheme %q is not kafka", scheme)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		return fail("%q: no query or fragment is allowed", rest[i:])
	}
	hosts, topic, ok := strings.Cut(rest, "/")
	if !ok || topic == "" {
		return fail("no topic")
	}
	if strings.Contains(hosts, "@") {
		return fail("user info is not supported")
	}
	if hosts == "" {
		return fail("no broker")
	}
	for h := range strings.SplitSeq(hosts, ",") {
		if h == "" {
			return fail("empty broker in the list")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			return fail("broker %q: want HOST:PORT", h)
		}
		if host == "" {
			return fail("broker %q: no host", h)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return fail("broker %q: port %q is not 1-65535", h, port)
		}
		seeds = append(seeds, net.JoinHostPort(host, port))
	}
	if strings.Contains(topic, "/") {
		return fail("topic %q holds a slash", topic)
	}
	if err := checkTopic(topic); err != nil {
		return fail("%v", err)
	}
	return seeds, topic, nil
}

// checkTopic applies Kafka's rules for a topic name.
func checkTopic(t string) error {
	if t == "." || t == ".." {
		return fmt.Errorf("topic %q is not allowed", t)
	}
	if len(t) > 249 {
		return fmt.Errorf("topic of %d characters is longer than 249", len(t))
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic %q: character %q at %d is not one of a-z A-Z 0-9 . _ -", t, c, i)
		}
	}
	return nil
}
