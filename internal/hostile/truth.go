package hostile

// HugePacket is the captured size over which a packet counts in
// Truth.HugePackets: kdupcap's documented bound on one packet (4 MiB), past
// which a reader is expected to skip it unread and count it.
const HugePacket = 4 << 20

// Truth is what a capture holds, as its generator wrote it: the ground truth
// a run of kdupcap on it is judged by. Counts are exact unless said
// otherwise.
type Truth struct {
	Kind  Kind
	Scale float64

	// Bytes is the size of the file written; Expanded, for a compressed
	// capture, its size once decompressed.
	Bytes, Expanded int64
	// Packets is the number of packet records, MaxPacket the largest
	// captured length.
	Packets, MaxPacket int64
	// HugePackets were over HugePacket captured bytes (HugeBytes in all;
	// for a pcapng, their blocks' bytes, as kdupcap counts them).
	HugePackets, HugeBytes int64
	// SnapLen is the snap length every packet was cut to (0: none cut);
	// SnapCutPackets were cut, losing SnapCutBytes.
	SnapLen, SnapCutPackets, SnapCutBytes int64
	// Truncated: the file ends inside a record or block.
	Truncated bool

	// Connections is the number of TCP connections (4-tuples) written.
	Connections int64
	// Gaps are holes left in TCP streams (GapBytes in all): bytes never
	// sent, the peer's ACK covering them.
	Gaps, GapBytes int64

	// Requests is the number of produce requests written whole;
	// Unanswered of them got no response.
	Requests, Unanswered int64
	// Unfinished frames were begun and never finished, UnfinishedBytes of
	// them written.
	Unfinished, UnfinishedBytes int64
	// Batches counts the record batches in whole requests; CorruptBatches
	// of them carry a CRC that does not match their bytes.
	Batches, CorruptBatches int64
	// DecompressedBytes is what the compressed batches expand to.
	DecompressedBytes int64
	// Malformed is the number of frames written so as not to parse as
	// requests (a negative size, a count or length past the frame);
	// BadBatches the batches of parsed requests that cannot be read (a
	// batch length below its header, record counts and lengths that lie).
	Malformed, BadBatches int64
	// Topics and ClientIDs are the distinct topic names and client.ids.
	Topics, ClientIDs int64
	// Clusters is the number of clusters whose Metadata responses name a
	// ClusterID.
	Clusters int
	// Echoed is the number of requests carried on two connections (a
	// proxy's legs, a connection before and after NAT).
	Echoed int64

	// Resends is the number of batches sent twice as the same bytes.
	Resends int
	// Findings is the number of "duplicate" findings a correct analysis
	// gives, Duplicated of them with verdict duplicated. Below Resends
	// when the capture hides them (cut by the snap length).
	Findings, Duplicated int
	// RecordFindings is the number of record-level findings a correct
	// analysis gives with --app-duplicates (0 without it).
	RecordFindings int
}
