package emit

import (
	"slices"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in    string
		seeds []string
		topic string
		err   string // in the error, when one is wanted
	}{
		{in: "kafka://127.0.0.1:9092/kdupcap-findings", seeds: []string{"127.0.0.1:9092"}, topic: "kdupcap-findings"},
		{in: "kafka://a:9092,b.example:19092/t.x_y-1", seeds: []string{"a:9092", "b.example:19092"}, topic: "t.x_y-1"},
		{in: "KAFKA://[::1]:9092/t", seeds: []string{"[::1]:9092"}, topic: "t"},
		{in: "", err: "no scheme"},
		{in: "127.0.0.1:9092/t", err: "no scheme"},
		{in: "http://h:1/t", err: `scheme "http" is not kafka`},
		{in: "kafka://h:9092", err: "no topic"},
		{in: "kafka://h:9092/", err: "no topic"},
		{in: "kafka:///t", err: "no broker"},
		{in: "kafka://h/t", err: `broker "h": want HOST:PORT`},
		{in: "kafka://h:/t", err: `port "" is not 1-65535`},
		{in: "kafka://h:0/t", err: `port "0" is not 1-65535`},
		{in: "kafka://h:65536/t", err: `port "65536" is not 1-65535`},
		{in: "kafka://h:x/t", err: `port "x" is not 1-65535`},
		{in: "kafka://:9092/t", err: "no host"},
		{in: "kafka://h:1,,g:2/t", err: "empty broker"},
		{in: "kafka://::1:9092/t", err: "want HOST:PORT"},
		{in: "kafka://u:p@h:9092/t", err: "user info"},
		{in: "kafka://h:9092/t?acks=1", err: "no query or fragment"},
		{in: "kafka://h:9092/t#x", err: "no query or fragment"},
		{in: "kafka://h:9092/a/b", err: "holds a slash"},
		{in: "kafka://h:9092/..", err: `topic ".." is not allowed`},
		{in: "kafka://h:9092/a b", err: `character ' ' at 1`},
		{in: "kafka://h:9092/caf%C3%A9", err: `character '%' at 3`},
		{in: "kafka://h:9092/" + strings.Repeat("t", 250), err: "longer than 249"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			seeds, topic, err := ParseURL(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "report: emit URL ") {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				if seeds != nil || topic != "" {
					t.Errorf("results beside the error: %v %q", seeds, topic)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seeds, tt.seeds) || topic != tt.topic {
				t.Errorf("got %v %q, want %v %q", seeds, topic, tt.seeds, tt.topic)
			}
		})
	}
}
