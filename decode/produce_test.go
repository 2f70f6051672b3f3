package decode

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionScript is a produce request of version v to two topics, three
// partitions, answered in a different order than asked.
func versionScript(v int16, corr int32) []msg {
	rec := func(i int) []byte {
		payload := fmt.Sprintf("payload-%d-%d", v, i)
		switch {
		case v < 2:
			return legacySet(0, 0, 2, payload)
		case v < 3:
			return legacySet(1, 0, 3, payload)
		default:
			return append(recordBatch(-1, -1, -1, 2, payload), recordBatch(-1, -1, -1, 1, payload+"x")...)
		}
	}
	req := produceRequest(v, -1,
		part{"alpha", 0, rec(0)},
		part{"alpha", 1, rec(1)},
		part{"beta", 4, rec(2)},
	)
	resp := produceResponse(v,
		answer{"beta", 4, 0, 40},
		answer{"alpha", 1, 7, 11},
		answer{"alpha", 0, 0, 10},
	)
	return []msg{
		{fromClient: true, frame: requestFrame(req, corr, "cid")},
		{fromClient: false, frame: responseFrame(resp, corr)},
	}
}

func TestProduceVersions(t *testing.T) {
	for v := int16(0); v <= 13; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			var s sink
			d := New(&s, Options{})
			// For v13, another connection's Metadata response names the
			// topics first.
			meta := []msg{
				{fromClient: true, frame: requestFrame(&kmsg.MetadataRequest{Version: 12}, 1, "cid")},
				{fromClient: false, frame: responseFrame(metadataResponse("alpha", "beta"), 1)},
			}
			feed(d, meta, whole, false)
			feed(d, versionScript(v, 9), whole, false)
			if len(s.xs) != 1 {
				t.Fatalf("got %d exchanges, want 1; errors %q", len(s.xs), d.Errors())
			}
			x := s.xs[0]
			if !x.Responded || x.NoResponse != "" || x.CorrelationID != 9 || x.Version != v || x.Acks != -1 || x.TimeoutMillis != 5000 {
				t.Errorf("exchange %+v", x)
			}
			if x.ClientID == nil || *x.ClientID != "cid" {
				t.Errorf("client.id %v", x.ClientID)
			}
			if x.Conn == nil || x.Conn.ID != 2 || x.Conn.Client != client || x.Conn.Broker != broker || x.Conn.DetectedBy != "port" {
				t.Errorf("conn %+v", x.Conn)
			}
			if x.ThrottleMillis != 3 && v >= 1 {
				t.Errorf("throttle %d", x.ThrottleMillis)
			}
			wantBatches := 6
			if v < 3 {
				wantBatches = 3
			}
			if len(x.Batches) != wantBatches {
				t.Fatalf("got %d batches, want %d", len(x.Batches), wantBatches)
			}
			want := map[string]struct {
				code   int16
				offset int64
			}{"alpha/0": {0, 10}, "alpha/1": {7, 11}, "beta/4": {0, 40}}
			for i, b := range x.Batches {
				key := fmt.Sprintf("%s/%d", b.Topic, b.Partition)
				w, ok := want[key]
				if !ok {
					t.Fatalf("batch %d: topic %q partition %d", i, b.Topic, b.Partition)
				}
				if b.Response == nil || b.Response.ErrorCode != w.code || b.Response.BaseOffset != w.offset {
					t.Errorf("batch %d (%s): response %+v", i, key, b.Response)
				}
				if (b.TopicID != [16]byte{}) != (v >= 13) {
					t.Errorf("batch %d: topic ID %x at v%d", i, b.TopicID, v)
				}
				if v >= 5 && b.Response != nil && b.Response.LogStartOffset != 7 {
					t.Errorf("batch %d: log start offset %d", i, b.Response.LogStartOffset)
				}
				if v >= 8 && w.code != 0 && (b.Response == nil || b.Response.ErrorMessage == nil || *b.Response.ErrorMessage != "boom") {
					t.Errorf("batch %d: error message missing", i)
				}
				if b.Hash == 0 || b.Length == 0 || b.NumRecords == 0 {
					t.Errorf("batch %d: %+v", i, b)
				}
				switch {
				case v < 2:
					if b.Magic != 0 || b.NumRecords != 2 || b.ProducerID != -1 || b.FirstTimestamp != -1 {
						t.Errorf("batch %d: legacy v0 %+v", i, b)
					}
				case v < 3:
					if b.Magic != 1 || b.NumRecords != 3 || b.ProducerID != -1 || b.FirstTimestamp != 1700000000000 || b.MaxTimestamp != 1700000000002 {
						t.Errorf("batch %d: legacy v1 %+v", i, b)
					}
				default:
					if b.Magic != 2 || b.ProducerID != -1 || b.CRC == 0 {
						t.Errorf("batch %d: %+v", i, b)
					}
				}
			}
			st := d.Stats()
			if st.ProduceRequests != 1 || st.ProduceResponses != 1 || st.Malformed != 0 || st.Batches != int64(wantBatches) || st.Skipped != 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestSplits checks that frames cut anywhere give the same exchanges.
func TestSplits(t *testing.T) {
	var script []msg
	for v := int16(0); v <= 13; v++ {
		script = append(script, versionScript(v, int32(100+v))...)
	}
	// An acks=0 request, a skipped API, and a request left unanswered.
	script = append(script,
		msg{fromClient: true, frame: requestFrame(produceRequest(9, 0, part{"t", 0, recordBatch(5, 0, 0, 1, "zero")}), 200, "c")},
		msg{fromClient: true, frame: requestFrame(&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "x", ClientSoftwareVersion: "1"}, 201, "c")},
		msg{fromClient: false, frame: responseFrame(&kmsg.ApiVersionsResponse{Version: 3}, 201)},
		msg{fromClient: true, frame: requestFrame(produceRequest(7, 1, part{"t", 0, recordBatch(5, 0, 1, 1, "late")}), 202, "c")},
	)
	want, wantStats, d := decodeScript(Options{}, script, whole)
	if len(want) != 16 || wantStats.Malformed != 0 {
		t.Fatalf("whole: %d exchanges, stats %+v, errors %q", len(want), wantStats, d.Errors())
	}
	if want[14].NoResponse != NoResponseAcks0 || want[15].NoResponse != NoResponseClosed {
		t.Errorf("no-response reasons %q %q", want[14].NoResponse, want[15].NoResponse)
	}
	maxLen := 0
	for _, m := range script {
		maxLen = max(maxLen, len(m.frame))
	}
	check := func(name string, split func([]byte) [][]byte) {
		got, st, _ := decodeScript(Options{}, script, split)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: exchanges differ", name)
		}
		if st != wantStats {
			t.Fatalf("%s: stats %+v, want %+v", name, st, wantStats)
		}
	}
	check("bytewise", bytewise)
	for k := 0; k <= maxLen; k++ {
		check(fmt.Sprintf("cut at %d", k), cutAt(k))
	}
}

func TestNoResponse(t *testing.T) {
	req := func(corr int32, acks int16) msg {
		return msg{fromClient: true, frame: requestFrame(produceRequest(9, acks, part{"t", 0, recordBatch(1, 0, corr, 1, "r")}), corr, "c")}
	}
	resp := func(corr int32) msg {
		return msg{fromClient: false, frame: responseFrame(produceResponse(9, answer{"t", 0, 0, int64(corr)}), corr)}
	}
	gap := func(fromClient bool) msg { return msg{fromClient: fromClient, gap: true, frame: make([]byte, 100)} }
	tests := []struct {
		name   string
		opts   Options
		script []msg
		want   []string // per exchange in emit order: "corr:reason" or "corr:ok"
		stats  Stats    // only the non-zero fields checked
	}{
		{"answered", Options{}, []msg{req(1, -1), resp(1)}, []string{"1:ok"}, Stats{ProduceResponses: 1}},
		{"acks=0 at once", Options{}, []msg{req(1, 0), req(2, 1), resp(2)}, []string{"1:acks=0", "2:ok"}, Stats{ProduceRequests: 2}},
		{"later response seen", Options{}, []msg{req(1, 1), req(2, 1), req(3, 1), resp(3)}, []string{"1:later response seen", "2:later response seen", "3:ok"}, Stats{}},
		{"closed", Options{}, []msg{req(1, 1), req(2, -1)}, []string{"1:connection closed", "2:connection closed"}, Stats{}},
		{"gap in responses", Options{}, []msg{req(1, 1), req(2, 1), gap(false), resp(2)}, []string{"1:bytes lost", "2:ok"}, Stats{Resyncs: 1}},
		{"gap then close", Options{}, []msg{req(1, 1), gap(false), req(2, 1)}, []string{"1:bytes lost", "2:connection closed"}, Stats{}},
		{"gap in requests", Options{}, []msg{req(1, 1), gap(true), req(3, 1), resp(1), resp(2), resp(3)}, []string{"1:ok", "3:ok"}, Stats{Resyncs: 1, Unmatched: 1}},
		{"evicted", Options{MaxPending: 2}, []msg{req(1, 1), req(2, 1), req(3, 1), resp(3)}, []string{"1:evicted", "2:later response seen", "3:ok"}, Stats{Evicted: 1}},
		{"unmatched", Options{}, []msg{req(1, 1), resp(1), resp(5)}, []string{"1:ok"}, Stats{Unmatched: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, st, d := decodeScript(tt.opts, tt.script, whole)
			var got []string
			for _, x := range xs {
				r := x.NoResponse
				if x.Responded {
					r = "ok"
					if x.Batches[0].Response == nil || x.Batches[0].Response.BaseOffset != int64(x.CorrelationID) {
						t.Errorf("corr %d: response %+v", x.CorrelationID, x.Batches[0].Response)
					}
				}
				got = append(got, fmt.Sprintf("%d:%s", x.CorrelationID, r))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			checkStats(t, st, tt.stats)
			if st.Malformed != 0 {
				t.Errorf("malformed %d: %q", st.Malformed, d.Errors())
			}
		})
	}
}

// checkStats compares the non-zero fields of want with got.
func checkStats(t *testing.T, got, want Stats) {
	t.Helper()
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range wv.NumField() {
		if w := wv.Field(i).Int(); w != 0 && gv.Field(i).Int() != w {
			t.Errorf("stats %s = %d, want %d", wv.Type().Field(i).Name, gv.Field(i).Int(), w)
		}
	}
}
