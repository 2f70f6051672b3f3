package gencap

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/internal/kwire"
)

// partitionBatch is one partition's batch in a produce request.
type partitionBatch struct {
	part  *partition
	batch []byte
}

// produceRequest encodes a ProduceRequest frame with kmsg; topics keep the
// order of their first partition in batches.
func produceRequest(f *kmsg.RequestFormatter, version int16, acks int16, timeoutMillis int32, correlationID int32, batches []partitionBatch) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = timeoutMillis
	for _, pb := range batches {
		ti := slices.IndexFunc(req.Topics, func(t kmsg.ProduceRequestTopic) bool { return t.Topic == pb.part.topic })
		if ti < 0 {
			t := kmsg.NewProduceRequestTopic()
			t.Topic = pb.part.topic
			req.Topics = append(req.Topics, t)
			ti = len(req.Topics) - 1
		}
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = pb.part.id
		p.Records = pb.batch
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, p)
	}
	return f.AppendRequest(nil, req, correlationID)
}

// partitionAnswer is the broker's answer for one partition.
type partitionAnswer struct {
	part       *partition
	errorCode  int16
	baseOffset int64
}

// produceResponse encodes a ProduceResponse frame answering the partitions
// in order.
func produceResponse(version int16, correlationID int32, answers []partitionAnswer) []byte {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	for _, a := range answers {
		ti := slices.IndexFunc(resp.Topics, func(t kmsg.ProduceResponseTopic) bool { return t.Topic == a.part.topic })
		if ti < 0 {
			t := kmsg.NewProduceResponseTopic()
			t.Topic = a.part.topic
			resp.Topics = append(resp.Topics, t)
			ti = len(resp.Topics) - 1
		}
		p := kmsg.NewProduceResponseTopicPartition()
		p.Partition = a.part.id
		p.ErrorCode = a.errorCode
		p.BaseOffset = a.baseOffset
		p.LogStartOffset = 0
		if a.errorCode != 0 && version >= 8 {
			msg := errorMessage(a.errorCode)
			p.ErrorMessage = &msg
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
	}
	return kwire.AppendResponse(nil, correlationID, resp)
}

func errorMessage(code int16) string {
	switch code {
	case errRequestTimedOut:
		return "Request timed out"
	case errNotLeaderOrFollower:
		return "This server is not the leader for that topic-partition"
	}
	return ""
}

// errorName is the Kafka name of an error code the generator answers with.
func errorName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case errRequestTimedOut:
		return "REQUEST_TIMED_OUT"
	case errNotLeaderOrFollower:
		return "NOT_LEADER_OR_FOLLOWER"
	}
	return "UNKNOWN_SERVER_ERROR"
}

// Kafka error codes the generator answers with.
const (
	errNotLeaderOrFollower int16 = 6
	errRequestTimedOut     int16 = 7
)

// apiVersionsRequest encodes the ApiVersions v3 request a client sends first.
func apiVersionsRequest(f *kmsg.RequestFormatter, correlationID int32) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "gencap"
	req.ClientSoftwareVersion = "1.0.0"
	return f.AppendRequest(nil, req, correlationID)
}

// apiVersionsResponse encodes the broker's answer to apiVersionsRequest.
func apiVersionsResponse(correlationID int32) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	for _, k := range []struct{ key, min, max int16 }{{0, 0, 11}, {1, 0, 16}, {3, 0, 12}, {18, 0, 4}} {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = k.key, k.min, k.max
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	return kwire.AppendResponse(nil, correlationID, resp)
}
