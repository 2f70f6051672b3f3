package pipeline

import (
	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/report"
)

// buildSummary puts the counts of the stages together; conns are the Kafka
// connections listed, in ID order.
func buildSummary(files, inputErrs []string, cs capture.Stats, ds decode.Stats, conns []decode.ConnSummary, ts detect.Stats) report.Summary {
	s := report.Summary{
		Files:            files,
		Packets:          cs.Packets,
		Bytes:            cs.Bytes,
		TCPConnections:   cs.TCPConnections,
		Gaps:             cs.Gaps,
		GapBytes:         cs.GapBytes,
		SnapLen:          cs.SnapLen,
		SnapCut:          cs.SnapCut,
		SnapCutBytes:     cs.SnapCutBytes,
		Frames:           ds.Frames,
		ProduceRequests:  ds.ProduceRequests,
		ProduceResponses: ds.ProduceResponses,
		Batches:          ds.Batches,
		Records:          ds.Records,
		Malformed:        ds.Malformed,
		Resyncs:          ds.Resyncs,
		FetchResponses:   ds.FetchResponses,
		FetchedBatches:   ds.FetchedBatches,
		Findings:         ts.Findings,
		RecordFindings:   ts.RecordFindings,
		EchoedRequests:   ts.Echoes,
		EvictedBatches:   ts.Evicted,
		EvictedAge:       ts.EvictedAge,
		ByVerdict:        map[string]int64{},
		Errors:           inputErrs,
	}
	for v, n := range ts.ByVerdict {
		s.ByVerdict[string(v)] = n
	}
	for _, c := range conns {
		s.KafkaConnections = append(s.KafkaConnections, report.Connection{
			ID:              c.Info.ID,
			Client:          c.Info.Client,
			Broker:          c.Info.Broker,
			DetectedBy:      c.Info.DetectedBy,
			ClientIDs:       c.ClientIDs,
			ProduceRequests: c.ProduceRequests,
			SASLMechanism:   c.SASLMechanism,
			SASLUser:        c.SASLUser,
			SASLFailed:      c.SASLFailed,
		})
	}
	for _, l := range ts.EchoLegs {
		s.EchoLegs = append(s.EchoLegs, report.EchoLeg{FirstClient: l.FirstClient, FirstBroker: l.FirstBroker,
			SecondClient: l.SecondClient, SecondBroker: l.SecondBroker, Requests: l.Requests})
	}
	s.Dropped = report.Dropped{OversizedPackets: cs.Oversized, OversizedBytes: cs.OversizedBytes,
		CorruptBatches: ds.CorruptBatches, DecompressSkipped: ds.DecompressSkipped,
		BufferDrops: ds.BufferDrops, ReorderGivenUp: cs.ReorderGivenUp,
		OversizedFrames: ds.OversizedFrames, OversizedProduce: ds.OversizedProduce,
		OtherTopicsBatches: ts.TopicsOverflow, PrintsCut: ds.PrintsCut, PrintsSkipped: ds.PrintsSkipped,
		EvictedConnections: cs.Evicted}
	s.KafkaConnectionsOmitted = max(0, ds.Connections-int64(len(s.KafkaConnections)))
	s.ByTopic = topicCounts(ts)
	return s
}

// topicCounts are the Detector's counts per topic, for the report.
func topicCounts(ts detect.Stats) []report.TopicCount {
	out := make([]report.TopicCount, 0, len(ts.Topics))
	for _, t := range ts.Topics {
		out = append(out, report.TopicCount{
			Topic:      t.Topic,
			Batches:    t.Batches,
			Records:    t.Records,
			Findings:   t.Findings,
			Duplicated: t.Duplicated,
		})
	}
	return out
}
