package decode

// Add adds o's counts to s: the Stats of Decoders that share one capture
// (see Shared) summed into the one a Decoder would have counted.
func (s *Stats) Add(o Stats) {
	s.Connections += o.Connections
	s.Rejected += o.Rejected
	s.Frames += o.Frames
	s.Requests += o.Requests
	s.Responses += o.Responses
	s.ProduceRequests += o.ProduceRequests
	s.ProduceResponses += o.ProduceResponses
	s.Batches += o.Batches
	s.Records += o.Records
	s.Malformed += o.Malformed
	s.Resyncs += o.Resyncs
	s.Skipped += o.Skipped
	s.Unmatched += o.Unmatched
	s.Evicted += o.Evicted
	s.DroppedBytes += o.DroppedBytes
	s.RecordPrints += o.RecordPrints
	s.PrintedEager += o.PrintedEager
	s.PrintsCut += o.PrintsCut
	s.PrintsSkipped += o.PrintsSkipped
	s.RecordErrors += o.RecordErrors
	s.DecompressTruncated += o.DecompressTruncated
	s.DecompressedBytes += o.DecompressedBytes
	s.DecompressSkipped += o.DecompressSkipped
	s.CorruptBatches += o.CorruptBatches
	s.BufferDrops += o.BufferDrops
	s.OversizedFrames += o.OversizedFrames
	s.OversizedProduce += o.OversizedProduce
	s.OversizedBytes += o.OversizedBytes
	s.FetchResponses += o.FetchResponses
	s.FetchedBatches += o.FetchedBatches
	s.SASLAuthentications += o.SASLAuthentications
	s.SASLFailures += o.SASLFailures
	s.SASLTokens += o.SASLTokens
}
