package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// appendRequest appends the frame of req (size, header, body) as kmsg's
// RequestFormatter writes it; a nil clientID is a null client.id.
func appendRequest(dst []byte, clientID *string, corr int32, req kmsg.Request) []byte {
	var f *kmsg.RequestFormatter
	if clientID != nil {
		f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*clientID))
	} else {
		f = kmsg.NewRequestFormatter()
	}
	return f.AppendRequest(dst, req, corr)
}

// appendResponse appends the frame of resp: size, correlation ID, the
// header's tags when flexible (never for ApiVersions), body.
func appendResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// produceHead is what a ProduceRequest of one topic and partition says
// besides its records.
type produceHead struct {
	version   int16
	clientID  *string
	corr      int32
	acks      int16
	timeoutMs int32
	topic     string
	partition int32
}

func (h produceHead) request(records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = h.version
	req.Acks = h.acks
	req.TimeoutMillis = h.timeoutMs
	t := kmsg.NewProduceRequestTopic()
	t.Topic = h.topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = h.partition
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// produceBytes is the whole frame of a ProduceRequest carrying records.
func produceBytes(dst []byte, h produceHead, records []byte) []byte {
	return appendRequest(dst, h.clientID, h.corr, h.request(records))
}

// splice is the marker that stands in for streamed records while kmsg
// encodes the request around them.
var splice = []byte("\x00hostile-splice\x00")

// produceFrame returns a ProduceRequest frame whose records are streamed
// from records: kmsg encodes the request with a marker in their place, the
// marker's length fields and the frame size are then set to the real
// length. Only the bytes around the records are held.
func produceFrame(h produceHead, records source) (source, error) {
	out := produceBytes(nil, h, splice)
	i := bytes.LastIndex(out, splice)
	if i < 0 {
		return nil, fmt.Errorf("produce v%d: splice marker not found", h.version)
	}
	n := records.left()
	var prefix []byte
	if h.version >= 9 { // compact nullable bytes: uvarint(len+1)
		if out[i-1] != byte(len(splice)+1) {
			return nil, fmt.Errorf("produce v%d: unexpected records length byte %#x", h.version, out[i-1])
		}
		prefix = binary.AppendUvarint(append([]byte(nil), out[:i-1]...), uint64(n+1))
	} else {
		if got := int32(binary.BigEndian.Uint32(out[i-4:])); got != int32(len(splice)) {
			return nil, fmt.Errorf("produce v%d: unexpected records length %d", h.version, got)
		}
		prefix = append([]byte(nil), out[:i]...)
		binary.BigEndian.PutUint32(prefix[i-4:], uint32(n))
	}
	suffix := append([]byte(nil), out[i+len(splice):]...)
	size := int64(len(prefix)-4) + n + int64(len(suffix))
	if size > 1<<31-1 {
		return nil, fmt.Errorf("produce frame of %d bytes does not fit an int32 size", size)
	}
	binary.BigEndian.PutUint32(prefix, uint32(size))
	return chain(&bytesSrc{b: prefix}, records, &bytesSrc{b: suffix}), nil
}

// produceResponse is the frame of a ProduceResponse for one partition.
func produceResponse(dst []byte, version int16, corr int32, topic string, partition int32, errCode int16, baseOffset int64) []byte {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	t := kmsg.NewProduceResponseTopic()
	t.Topic = topic
	p := kmsg.NewProduceResponseTopicPartition()
	p.Partition = partition
	p.ErrorCode = errCode
	p.BaseOffset = baseOffset
	p.LogAppendTime = -1
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return appendResponse(dst, corr, resp)
}

// metadataBroker is one broker a Metadata response lists.
type metadataBroker struct {
	nodeID int32
	host   string
	port   int32
}

// metadataExchange is a Metadata v7 request for topic and its response
// naming clusterID, the brokers, and topic's partition 0 led by the first.
func metadataExchange(clientID *string, corr int32, clusterID, topic string, brokers []metadataBroker) (req, resp []byte) {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 7
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	r.Topics = append(r.Topics, rt)
	req = appendRequest(nil, clientID, corr, r)

	m := kmsg.NewPtrMetadataResponse()
	m.Version = 7
	m.ClusterID = kmsg.StringPtr(clusterID)
	m.ControllerID = brokers[0].nodeID
	for _, b := range brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.nodeID, b.host, b.port
		m.Brokers = append(m.Brokers, mb)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition = 0
	mp.Leader = brokers[0].nodeID
	mp.Replicas = []int32{brokers[0].nodeID}
	mp.ISR = []int32{brokers[0].nodeID}
	mt.Partitions = append(mt.Partitions, mp)
	m.Topics = append(m.Topics, mt)
	resp = appendResponse(nil, corr, m)
	return req, resp
}

// Kafka error codes used in answers.
const (
	errNone            = 0
	errRequestTimedOut = 7
)
