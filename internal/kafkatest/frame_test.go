package kafkatest

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/internal/kwire"
)

func TestNextFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    int // frame length, 0 if none
		wantErr bool
	}{
		{name: "empty", in: nil},
		{name: "short size", in: []byte{0, 0, 0}},
		{name: "partial body", in: []byte{0, 0, 0, 3, 1, 2}},
		{name: "whole", in: []byte{0, 0, 0, 2, 1, 2}, want: 6},
		{name: "whole and more", in: []byte{0, 0, 0, 1, 9, 0, 0}, want: 5},
		{name: "empty body", in: []byte{0, 0, 0, 0}, want: 4},
		{name: "negative", in: []byte{0xff, 0xff, 0xff, 0xfd}, wantErr: true},
		{name: "oversized", in: binary.BigEndian.AppendUint32(nil, maxFrameBytes+1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, ok, err := nextFrame(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if ok != (tt.want > 0) || len(frame) != tt.want {
				t.Fatalf("frame %x ok %v, want %d bytes", frame, ok, tt.want)
			}
		})
	}
}

func TestSkipTags(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    int
		wantErr bool
	}{
		{name: "none", in: []byte{0, 0xaa}, want: 1},
		{name: "one tag", in: []byte{1, 0, 2, 0xaa, 0xbb, 0xcc}, want: 5},
		{name: "two tags", in: []byte{2, 0, 1, 0xaa, 1, 0, 0xcc}, want: 6},
		{name: "empty", in: nil, wantErr: true},
		{name: "size past end", in: []byte{1, 0, 5, 0xaa}, wantErr: true},
		{name: "count past end", in: []byte{3, 0, 0}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := skipTags(tt.in)
			if (err != nil) != tt.wantErr || (err == nil && n != tt.want) {
				t.Fatalf("skipTags(%x) = %d, %v; want %d, error %v", tt.in, n, err, tt.want, tt.wantErr)
			}
		})
	}
}

// requestFrame frames req with a request header carrying clientID.
func requestFrame(req kmsg.Request, corr int32, clientID string) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func produceRequest(version int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 1234
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	rt.TopicID = [16]byte{1, 2, 3}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 3
	rp.Records = []byte("not a batch, not parsed")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestParseRequest(t *testing.T) {
	for _, v := range []int16{3, 7, 8, 9, 12, 13} {
		t.Run(fmt.Sprintf("Produce/v%d", v), func(t *testing.T) {
			frame := requestFrame(produceRequest(v), 42, "rdkafka")
			h, req, err := parseRequest(frame)
			if err != nil {
				t.Fatal(err)
			}
			pr, ok := req.(*kmsg.ProduceRequest)
			if !ok {
				t.Fatalf("parsed %T, want *kmsg.ProduceRequest", req)
			}
			if h.key != 0 || h.version != v || h.correlationID != 42 {
				t.Errorf("header %+v", h)
			}
			if pr.TimeoutMillis != 1234 || pr.Acks != -1 || len(pr.Topics) != 1 || pr.Topics[0].Partitions[0].Partition != 3 {
				t.Errorf("request %+v", pr)
			}
			if v < 13 && pr.Topics[0].Topic != "orders" || v >= 13 && pr.Topics[0].TopicID != [16]byte{1, 2, 3} {
				t.Errorf("topic %q %x", pr.Topics[0].Topic, pr.Topics[0].TopicID)
			}
		})
	}
}

func TestParseRequestBad(t *testing.T) {
	good := requestFrame(produceRequest(9), 1, "c")
	tests := []struct {
		name  string
		frame []byte
	}{
		{name: "header cut", frame: good[:9]},
		{name: "client id cut", frame: good[:14]},
		{name: "body cut", frame: good[:len(good)-3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, req, err := parseRequest(tt.frame); err == nil && req != nil {
				t.Fatalf("parsed %x as %T without error", tt.frame, req)
			}
		})
	}
	unknown := requestFrame(produceRequest(9), 1, "")
	binary.BigEndian.PutUint16(unknown[4:], 30000)
	if _, req, err := parseRequest(unknown); err != nil || req != nil {
		t.Fatalf("unknown key: %T, %v; want nil, nil", req, err)
	}
}

func TestTimedOut(t *testing.T) {
	for _, v := range []int16{3, 7, 8, 9, 10, 13} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := produceRequest(v)
			resp := req.ResponseKind().(*kmsg.ProduceResponse)
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = "orders", [16]byte{1, 2, 3}
			ok := kmsg.NewProduceResponseTopicPartition()
			ok.Partition, ok.BaseOffset, ok.LogAppendTime = 3, 112, 99
			bad := kmsg.NewProduceResponseTopicPartition()
			bad.Partition, bad.ErrorCode, bad.BaseOffset = 4, kerr.NotLeaderForPartition.Code, -1
			rt.Partitions = append(rt.Partitions, ok, bad)
			resp.Topics = append(resp.Topics, rt)
			frame := kwire.AppendResponse(nil, 27, resp)

			out, err := timedOut(frame, req, 27)
			if err != nil {
				t.Fatal(err)
			}
			if got := int32(binary.BigEndian.Uint32(out[4:])); got != 27 {
				t.Fatalf("correlation ID %d, want 27", got)
			}
			if size := int(binary.BigEndian.Uint32(out)); size != len(out)-4 {
				t.Fatalf("size %d, frame %d bytes", size, len(out))
			}
			body, err := responseBody(out, req)
			if err != nil {
				t.Fatal(err)
			}
			got := req.ResponseKind().(*kmsg.ProduceResponse)
			if err := got.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			ps := got.Topics[0].Partitions
			if ps[0].ErrorCode != kerr.RequestTimedOut.Code || ps[0].BaseOffset != 112 || ps[0].LogAppendTime != -1 {
				t.Errorf("appended partition = %+v, want REQUEST_TIMED_OUT at 112", ps[0])
			}
			if ps[1].ErrorCode != kerr.NotLeaderForPartition.Code {
				t.Errorf("failed partition = %+v, want its error kept", ps[1])
			}
		})
	}
}
