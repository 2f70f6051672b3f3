package decode

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsMsg is an ApiVersions request of version v naming the client
// software.
func apiVersionsMsg(v int16, corr int32, name, version string) msg {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = v
	r.ClientSoftwareName, r.ClientSoftwareVersion = name, version
	return msg{fromClient: true, frame: requestFrame(r, corr, "c")}
}

// apiVersionsAnswer answers an ApiVersions request (header v0 always).
func apiVersionsAnswer(v int16, corr int32) msg {
	r := kmsg.NewPtrApiVersionsResponse()
	r.Version = v
	return msg{frame: responseFrame(r, corr)}
}

// TestApiVersionsSoftware: the client software of an ApiVersions v3+ request
// reaches every exchange of the connection; v0-v2 carry none; a later
// ApiVersions does not change what exchanges already handed over show; the
// responses after an ApiVersions stay matched.
func TestApiVersionsSoftware(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name                   string
		script                 []msg
		wantName, wantVersion  string
		wantExchanges, wantErr int64
	}{
		{
			name:          "v3 before produce",
			script:        []msg{apiVersionsMsg(3, 1, "kgo", "v1.22.3"), apiVersionsAnswer(3, 1), produceMsg(2), answerMsg(2)},
			wantName:      "kgo",
			wantVersion:   "v1.22.3",
			wantExchanges: 1,
		},
		{
			name:          "v4 bytewise",
			script:        []msg{apiVersionsMsg(4, 1, "librdkafka", "2.0.2"), apiVersionsAnswer(4, 1), produceMsg(2), answerMsg(2)},
			wantName:      "librdkafka",
			wantVersion:   "2.0.2",
			wantExchanges: 1,
		},
		{
			name:          "v2 names nothing",
			script:        []msg{apiVersionsMsg(2, 1, "", ""), apiVersionsAnswer(2, 1), produceMsg(2), answerMsg(2)},
			wantExchanges: 1,
		},
		{
			name:          "after the first produce request, not taken",
			script:        []msg{produceMsg(1), answerMsg(1), apiVersionsMsg(3, 2, "late", "1"), apiVersionsAnswer(3, 2), produceMsg(3), answerMsg(3)},
			wantExchanges: 2,
		},
		{
			name:          "cut to 128 bytes",
			script:        []msg{apiVersionsMsg(3, 1, long, long), produceMsg(2), answerMsg(2)},
			wantName:      long[:maxSoftwareBytes],
			wantVersion:   long[:maxSoftwareBytes],
			wantExchanges: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			split := whole
			if strings.Contains(tt.name, "bytewise") {
				split = bytewise
			}
			xs, st, d := decodeScript(Options{}, tt.script, split)
			if int64(len(xs)) != tt.wantExchanges || st.Malformed != tt.wantErr {
				t.Fatalf("%d exchanges, %d malformed (%v); want %d, %d", len(xs), st.Malformed, d.Errors(), tt.wantExchanges, tt.wantErr)
			}
			for _, x := range xs {
				if !x.Responded {
					t.Errorf("exchange %d not answered: %s", x.CorrelationID, x.NoResponse)
				}
				if x.Conn.ClientSoftwareName != tt.wantName || x.Conn.ClientSoftwareVersion != tt.wantVersion {
					t.Errorf("software %q %q, want %q %q", x.Conn.ClientSoftwareName, x.Conn.ClientSoftwareVersion, tt.wantName, tt.wantVersion)
				}
			}
		})
	}
}

// TestInFlight: each exchange counts the produce requests of its connection
// awaiting a response once it was sent, itself included; acks=0 counts 0;
// other requests pending do not count.
func TestInFlight(t *testing.T) {
	acks0 := msg{fromClient: true, frame: requestFrame(produceRequest(9, 0, part{"t", 0, recordBatch(1, 0, 9, 1, "r")}), 9, "c")}
	script := []msg{
		produceMsg(1),
		apiVersionsMsg(3, 50, "kgo", "v1"), // pending, not a produce request
		produceMsg(2), produceMsg(3),
		answerMsg(1), apiVersionsAnswer(3, 50),
		produceMsg(4),
		acks0,
		answerMsg(2), answerMsg(3), answerMsg(4),
		produceMsg(5), answerMsg(5),
	}
	xs, _, d := decodeScript(Options{}, script, whole)
	got := map[int32]int{}
	for _, x := range xs {
		got[x.CorrelationID] = x.InFlight
	}
	want := map[int32]int{1: 1, 2: 2, 3: 3, 4: 3, 9: 0, 5: 1}
	if len(got) != len(want) {
		t.Fatalf("exchanges %v, want %v (%v)", got, want, d.Errors())
	}
	for corr, n := range want {
		if got[corr] != n {
			t.Errorf("correlation %d in flight %d, want %d", corr, got[corr], n)
		}
	}
}

// TestApiVersionsVersion: ConnInfo holds the highest ApiVersions request
// version sent before the first ProduceRequest (a client falling back from
// v3 to v0 is still a v3 client), none when no ApiVersions came first.
func TestApiVersionsVersion(t *testing.T) {
	tests := []struct {
		name     string
		script   []msg
		wantSent bool
		want     int16
	}{
		{name: "v0 only (kafka-go, kafka-python 2.0)", script: []msg{apiVersionsMsg(0, 1, "", ""), apiVersionsAnswer(0, 1), produceMsg(2), answerMsg(2)}, wantSent: true, want: 0},
		{name: "v2 (kafkajs)", script: []msg{apiVersionsMsg(2, 1, "", ""), apiVersionsAnswer(2, 1), produceMsg(2), answerMsg(2)}, wantSent: true, want: 2},
		{name: "v3 then v0 fallback", script: []msg{apiVersionsMsg(3, 1, "kgo", "v1"), apiVersionsAnswer(0, 1), apiVersionsMsg(0, 2, "", ""), apiVersionsAnswer(0, 2), produceMsg(3), answerMsg(3)}, wantSent: true, want: 3},
		{name: "none", script: []msg{produceMsg(1), answerMsg(1)}},
		{name: "after the first produce request, not taken", script: []msg{produceMsg(1), answerMsg(1), apiVersionsMsg(2, 2, "", ""), apiVersionsAnswer(2, 2), produceMsg(3), answerMsg(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, _, d := decodeScript(Options{}, tt.script, whole)
			if len(xs) == 0 {
				t.Fatalf("no exchange (%v)", d.Errors())
			}
			for _, x := range xs {
				if x.Conn.ApiVersionsSent != tt.wantSent || x.Conn.ApiVersionsVersion != tt.want {
					t.Errorf("ApiVersions sent %v v%d, want %v v%d", x.Conn.ApiVersionsSent, x.Conn.ApiVersionsVersion, tt.wantSent, tt.want)
				}
			}
		})
	}
}
