package capture

// Add adds o's counts to s: the Stats of Assemblers that share one capture
// (pipeline's sharded run) summed into the one an Assembler would have
// counted. Evidence.Connections and HeldBytes, which say what is held now,
// add up as well; SnapLen, a length, is the larger of the two.
func (s *Stats) Add(o Stats) {
	s.Packets += o.Packets
	s.Bytes += o.Bytes
	s.NonTCP += o.NonTCP
	s.Undecodable += o.Undecodable
	s.TCPConnections += o.TCPConnections
	s.Gaps += o.Gaps
	s.GapBytes += o.GapBytes
	s.TCPPackets += o.TCPPackets
	s.PayloadBytes += o.PayloadBytes
	s.DeliveredBytes += o.DeliveredBytes
	s.Truncated += o.Truncated
	s.Retransmissions += o.Retransmissions
	s.OverlapBytes += o.OverlapBytes
	s.IdleClosed += o.IdleClosed
	s.Evicted += o.Evicted
	s.ReorderHolds += o.ReorderHolds
	s.Reordered += o.Reordered
	s.ReorderGivenUp += o.ReorderGivenUp
	s.SnapCut += o.SnapCut
	s.SnapCutBytes += o.SnapCutBytes
	s.SnapLen = max(s.SnapLen, o.SnapLen) // a length, not a count
	s.Oversized += o.Oversized
	s.OversizedBytes += o.OversizedBytes
	e, oe := &s.Evidence, o.Evidence
	e.Packets += oe.Packets
	e.Bytes += oe.Bytes
	e.DroppedPackets += oe.DroppedPackets
	e.DroppedBytes += oe.DroppedBytes
	e.ExpiredPackets += oe.ExpiredPackets
	e.ExpiredBytes += oe.ExpiredBytes
	e.Connections += oe.Connections
	e.HeldBytes += oe.HeldBytes
}
