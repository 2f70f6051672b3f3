package decode

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceMsg(corr int32) msg {
	return msg{fromClient: true, frame: requestFrame(produceRequest(9, -1, part{"t", 0, recordBatch(1, 0, corr, 1, "r")}), corr, "c")}
}

func answerMsg(corr int32) msg {
	return msg{fromClient: false, frame: responseFrame(produceResponse(9, answer{"t", 0, 0, int64(corr)}), corr)}
}

func corrs(xs []*Exchange) []int32 {
	var out []int32
	for _, x := range xs {
		if x.Responded {
			out = append(out, x.CorrelationID)
		} else {
			out = append(out, -x.CorrelationID)
		}
	}
	return out
}

func sizeFrame(size int32, rest ...byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), rest...)
}

func TestFraming(t *testing.T) {
	first := produceMsg(1)
	midStream := msg{fromClient: true, frame: first.frame[17:]} // inside the first request
	unknownKey := requestFrame(produceRequest(9, -1), 3, "c")
	binary.BigEndian.PutUint16(unknownKey[4:], 999)
	badVersion := requestFrame(produceRequest(9, -1), 3, "c")
	binary.BigEndian.PutUint16(badVersion[6:], 14)
	truncated := requestFrame(produceRequest(9, -1, part{"t", 0, recordBatch(1, 0, 0, 1, "r")}), 3, "c")
	truncated = truncated[:len(truncated)-10]
	binary.BigEndian.PutUint32(truncated, uint32(len(truncated)-4))
	// A v9 request header with 65 empty tagged fields (key 0, size 0).
	manyTags := []byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 3, 0, 1, 'c', 65}
	for range 65 {
		manyTags = append(manyTags, 0, 0)
	}
	manyTags = append(manyTags, make([]byte, 20)...)
	binary.BigEndian.PutUint32(manyTags, uint32(len(manyTags)-4))
	partialBatch := requestFrame(produceRequest(9, -1, part{"t", 0, append(recordBatch(1, 0, 0, 1, "r"), recordBatch(1, 0, 1, 1, "s")[:30]...)}), 4, "c")

	tests := []struct {
		name   string
		opts   Options
		script []msg
		want   []int32 // correlation IDs of the exchanges, negative if unanswered
		stats  Stats
		errs   []string // substrings of Errors, in order
	}{
		{
			name:   "mid-stream start resyncs at the next segment",
			script: []msg{midStream, answerMsg(1), produceMsg(2), answerMsg(2)},
			want:   []int32{2},
			stats:  Stats{Resyncs: 2, Unmatched: 0, ProduceRequests: 1},
		},
		{
			name:   "negative size",
			script: []msg{produceMsg(1), {fromClient: true, frame: sizeFrame(-3, 1, 2, 3)}, produceMsg(2), answerMsg(1), answerMsg(2)},
			want:   []int32{1, 2},
			stats:  Stats{Malformed: 1, Resyncs: 1},
			errs:   []string{"decode: frame size -3 at 10.0.0.1:55000->10.0.0.4:9092 byte " + strconv.Itoa(len(produceMsg(1).frame))},
		},
		{
			name:   "oversized",
			opts:   Options{MaxFrameBytes: 1000},
			script: []msg{produceMsg(1), answerMsg(1), {fromClient: false, frame: sizeFrame(5000, 0, 0, 0, 2)}, produceMsg(2), answerMsg(2)},
			want:   []int32{1, 2},
			stats:  Stats{Malformed: 1, Resyncs: 1},
			errs:   []string{"frame size 5000 at 10.0.0.4:9092->10.0.0.1:55000 byte "},
		},
		{
			name:   "header with too many tagged fields",
			script: []msg{produceMsg(1), {fromClient: true, frame: manyTags}, produceMsg(2), answerMsg(1), answerMsg(2)},
			want:   []int32{1, 2},
			stats:  Stats{Malformed: 1},
			errs:   []string{"65 tagged fields"},
		},
		{
			name:   "unknown api key is skipped",
			script: []msg{produceMsg(2), {fromClient: true, frame: unknownKey}, produceMsg(4), answerMsg(2), answerMsg(3), answerMsg(4)},
			want:   []int32{2, 4},
			stats:  Stats{Malformed: 1, Unmatched: 1},
			errs:   []string{"unknown api key 999 at 10.0.0.1:55000->10.0.0.4:9092 byte " + strconv.Itoa(len(produceMsg(2).frame))},
		},
		{
			name:   "version beyond kmsg",
			script: []msg{produceMsg(2), {fromClient: true, frame: badVersion}, produceMsg(4), answerMsg(4)},
			want:   []int32{-2, 4},
			stats:  Stats{Malformed: 1},
			errs:   []string{"api key 0 version 14 outside 0..13"},
		},
		{
			name:   "first frame of unknown api key is dropped unsynced",
			script: []msg{{fromClient: true, frame: unknownKey}, produceMsg(4), answerMsg(4)},
			want:   []int32{4},
			stats:  Stats{Resyncs: 1, DroppedBytes: int64(len(unknownKey))},
		},
		{
			name:   "produce body that does not parse",
			script: []msg{produceMsg(2), {fromClient: true, frame: truncated}, answerMsg(2), answerMsg(3), produceMsg(4), answerMsg(4)},
			want:   []int32{2, 4},
			stats:  Stats{Malformed: 1, Skipped: 0, Unmatched: 0},
			errs:   []string{"produce v9 request correlation 3"},
		},
		{
			name:   "partial trailing batch",
			script: []msg{{fromClient: true, frame: partialBatch}},
			want:   []int32{-4},
			stats:  Stats{Malformed: 1, Batches: 1},
			errs:   []string{"partial record batch header of 30 bytes at records byte 62"},
		},
		{
			name: "stray bytes with a pending correlation ID are not its answer",
			script: []msg{produceMsg(1), {fromClient: false, gap: true, frame: make([]byte, 10)},
				{fromClient: false, frame: sizeFrame(12, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)}, answerMsg(1)},
			want:  []int32{1},
			stats: Stats{Resyncs: 1, DroppedBytes: 16},
		},
		{
			name: "gap inside a request, then resume",
			script: []msg{produceMsg(1), {fromClient: true, frame: produceMsg(2).frame[:30]}, {fromClient: true, gap: true, frame: make([]byte, 5)},
				produceMsg(3), answerMsg(1), answerMsg(2), answerMsg(3)},
			want:  []int32{1, 3},
			stats: Stats{Resyncs: 1, Unmatched: 1, DroppedBytes: 30},
		},
		{
			name:   "response before any request",
			script: []msg{answerMsg(1), produceMsg(2), answerMsg(2)},
			want:   []int32{2},
			stats:  Stats{Resyncs: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, st, d := decodeScript(tt.opts, tt.script, whole)
			if got := corrs(xs); !equalInts(got, tt.want) {
				t.Errorf("exchanges %v, want %v", got, tt.want)
			}
			checkStats(t, st, tt.stats)
			errs := d.Errors()
			if len(errs) != len(tt.errs) {
				t.Fatalf("errors %q, want %d", errs, len(tt.errs))
			}
			for i, e := range tt.errs {
				if !strings.Contains(errs[i], e) {
					t.Errorf("error %q lacks %q", errs[i], e)
				}
			}
		})
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDetection(t *testing.T) {
	httpReq := []byte("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n")
	c1 := netip.MustParseAddrPort("10.0.0.1:40000")
	b1 := netip.MustParseAddrPort("10.0.0.9:19092")
	apiVersions := requestFrame(&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "x", ClientSoftwareVersion: "1"}, 0, "rdkafka")
	apiResp := responseFrame(&kmsg.ApiVersionsResponse{Version: 3}, 0)

	t.Run("not kafka without sniff", func(t *testing.T) {
		d := New(nil, Options{})
		if c := d.NewStream(c1, b1, t0); c != nil {
			t.Fatal("connection on no Kafka port taken without Sniff")
		}
	})
	t.Run("http rejected with sniff", func(t *testing.T) {
		d := New(nil, Options{Sniff: true})
		c := d.NewStream(c1, netip.MustParseAddrPort("10.0.0.9:8080"), t0)
		if c == nil {
			t.Fatal("nil stream with Sniff")
		}
		rejected := false
		for i := range 100 {
			if !c.Data(true, httpReq, t0) || !c.Data(false, bytes.Repeat([]byte("<html>"), 200), t0) {
				rejected = true
				if i > sniffGiveUpTries {
					t.Errorf("rejected only after %d segments", i)
				}
				break
			}
		}
		if !rejected {
			t.Fatal("HTTP connection never rejected")
		}
		c.Close(t0)
		if st := d.Stats(); st.Rejected != 1 || st.Connections != 0 || len(d.Connections()) != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("sniffed client is the side sending requests", func(t *testing.T) {
		var s sink
		d := New(&s, Options{Sniff: true})
		// The broker's side is a: the first packet seen came from it.
		c := d.NewStream(b1, c1, t0)
		c.Data(true, []byte{0}, t0) // a stray byte from the broker side
		for _, p := range bytewise(apiVersions) {
			if !c.Data(false, p, t0) {
				t.Fatal("rejected")
			}
		}
		c.Data(true, apiResp, t0)
		m := produceMsg(1)
		c.Data(false, m.frame, t0)
		c.Data(true, answerMsg(1).frame, t0)
		c.Close(t0)
		conns := d.Connections()
		if len(conns) != 1 {
			t.Fatalf("connections %+v", conns)
		}
		info := conns[0].Info
		if info.Client != c1 || info.Broker != b1 || info.DetectedBy != "sniff" || info.ID != 1 {
			t.Errorf("info %+v", info)
		}
		if strings.Join(conns[0].ClientIDs, ",") != "rdkafka,c" || conns[0].ProduceRequests != 1 || conns[0].Frames != 4 {
			t.Errorf("summary %+v", conns[0])
		}
		if len(s.xs) != 1 || !s.xs[0].Responded {
			t.Errorf("exchanges %v", corrs(s.xs))
		}
	})
	t.Run("port names the broker", func(t *testing.T) {
		d := New(nil, Options{Ports: []uint16{19092}})
		c := d.NewStream(b1, c1, t0)
		c.Data(false, apiVersions, t0)
		c.Data(true, apiResp, t0)
		conns := d.Connections()
		if len(conns) != 1 || conns[0].Info.Client != c1 || conns[0].Info.DetectedBy != "port" || conns[0].Frames != 2 {
			t.Errorf("connections %+v", conns)
		}
	})
}
