package report

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
)

// acrossConnections is a batch kgo re-sent on a new connection after the
// broker closed the first one without answering, then to another broker.
func acrossConnections() detect.Finding {
	c1, c2, c3 := netip.MustParseAddrPort("127.0.0.1:43524"), netip.MustParseAddrPort("127.0.0.1:43530"), netip.MustParseAddrPort("127.0.0.1:43540")
	b1, b2 := netip.MustParseAddrPort("127.0.0.1:37813"), netip.MustParseAddrPort("127.0.0.1:37814")
	return detect.Finding{
		ConnID: 1, Client: c1, Broker: b1, ClientID: str("kgo"), Topic: "orders", Partition: 2,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, BatchCRC: 0x1234abcd, Magic: 2,
		Match: detect.MatchBytes, Scope: detect.ScopeClient, Verdict: detect.Duplicated, AppendedOffsets: []int64{7, 9},
		Reason: "attempts 4 (connection 2) and 2 (connection 3) were appended at offsets 7 and 9: the log holds the batch at least twice (attempt 5 (connection 1) has no response in the capture)",
		Attempts: []detect.Attempt{
			{ConnID: 1, Client: c1, Broker: b1, CorrelationID: 5, Time: at(0), Version: 11, Acks: -1, TimeoutMillis: 300,
				NoResponse: "connection closed"},
			{ConnID: 2, Client: c2, Broker: b1, CorrelationID: 4, Time: at(60), Version: 11, Acks: -1, TimeoutMillis: 300,
				Cause: detect.CauseConnectionClosed, GapMillis: 60,
				Response: &detect.Response{Time: at(61), ErrorCode: 6, Error: "NOT_LEADER_OR_FOLLOWER", BaseOffset: 7, LogAppendTime: -1, LatencyMillis: 1}},
			{ConnID: 3, Client: c3, Broker: b2, CorrelationID: 2, Time: at(120), Version: 11, Acks: -1, TimeoutMillis: 300,
				Cause: detect.CauseBrokerError, CauseError: "NOT_LEADER_OR_FOLLOWER", GapMillis: 60,
				Response: &detect.Response{Time: at(121), ErrorCode: 0, Error: "NONE", BaseOffset: 9, LogAppendTime: -1, LatencyMillis: 1}},
		},
	}
}

// TestScopeJSON: "scope" on every finding, conn_id, client and broker on
// every attempt, in the documented order; a Finding built without them
// (older callers) reads as on one connection.
func TestScopeJSON(t *testing.T) {
	var buf bytes.Buffer
	write(t, NewJSON(&buf), []detect.Finding{acrossConnections(), findings()[0]}, Summary{})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	var across, one struct {
		Scope    string `json:"scope"`
		Attempts []struct {
			ConnID uint64 `json:"conn_id"`
			Client string `json:"client"`
			Broker string `json:"broker"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &across); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &one); err != nil {
		t.Fatal(err)
	}
	if across.Scope != "client" || len(across.Attempts) != 3 || across.Attempts[2].ConnID != 3 ||
		across.Attempts[2].Client != "127.0.0.1:43540" || across.Attempts[2].Broker != "127.0.0.1:37814" {
		t.Errorf("finding across connections: %+v", across)
	}
	if one.Scope != "connection" || one.Attempts[1].ConnID != 1 || one.Attempts[1].Client != "172.18.0.1:40312" ||
		one.Attempts[1].Broker != "172.18.0.3:19092" {
		t.Errorf("finding on one connection: %+v", one)
	}
	for _, order := range [][]string{
		{`"match":`, `"scope":`, `"verdict":`},
		{`"attempts":[{"conn_id":`, `"client":`, `"broker":`, `"correlation_id":`},
	} {
		rest := lines[0]
		for _, key := range order {
			i := strings.Index(rest, key)
			if i < 0 {
				t.Fatalf("%s missing or out of order in %s", key, lines[0])
			}
			rest = rest[i:]
		}
	}
}
