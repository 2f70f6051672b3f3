package report

import (
	"fmt"

	"github.com/kdupcap/kdupcap/detect"
)

// Dropped counts what the bounds on untrusted input left out or cut, so
// that a summary never reads as a whole answer when it is not: each count
// names the stage bound that made it.
type Dropped struct {
	// OversizedPackets (OversizedBytes) were packets over capture's
	// MaxPacketBytes, skipped unread.
	OversizedPackets, OversizedBytes int64
	// CorruptBatches failed their CRC: never matched.
	CorruptBatches int64
	// DecompressSkipped batches were left compressed because the run's
	// decompression budget was spent: their records not read or matched.
	DecompressSkipped int64
	// BufferDrops partial frames were dropped because the frames held over
	// all connections reached the bound (their directions resynced).
	BufferDrops int64
	// ReorderGivenUp reorder windows ran out: the holes were taken as lost.
	ReorderGivenUp int64
	// SecretsBlocks pcapng Decryption Secrets Blocks were over the bound on
	// key log bytes kept, left unread: their connections may show no key.
	SecretsBlocks int64
	// OversizedFrames Kafka frames (OversizedProduce of them
	// ProduceRequests) were over the bound on a frame decoded whole,
	// passed over but for their header.
	OversizedFrames, OversizedProduce int64
	// OtherTopicsBatches were batches to topics beyond the bound on topics
	// counted one by one (detect.MaxTopics), summed in one entry
	// (detect.OtherTopics).
	OtherTopicsBatches int64
	// PrintsCut batches had more records than are fingerprinted per batch
	// (decode's MaxBatchPrints): matched by their first ones; PrintsSkipped
	// batches were not fingerprinted, the prints held being at their
	// bound.
	PrintsCut, PrintsSkipped int64
	// EvictedConnections were closed early, the least recently active,
	// because the connections held reached their bound
	// (capture.AssemblerOptions.MaxConnections).
	EvictedConnections int64
}

// lines is one "name: what" row per non-zero count, for the table.
func (d Dropped) lines() [][]string {
	rows := []struct {
		n          int64
		name, text string
	}{
		{d.OversizedPackets, "oversized packets", fmt.Sprintf("%s (%d bytes) over the bound on one packet, skipped unread", plural(d.OversizedPackets, "packet"), d.OversizedBytes)},
		{d.CorruptBatches, "corrupt batches", fmt.Sprintf("%s whose CRC does not match their bytes: never matched", plural(d.CorruptBatches, "batch"))},
		{d.DecompressSkipped, "decompression budget", fmt.Sprintf("spent: %s left compressed, their records not read or matched", plural(d.DecompressSkipped, "batch"))},
		{d.BufferDrops, "frame buffer bound", fmt.Sprintf("reached: %s dropped (their directions resynced)", plural(d.BufferDrops, "partial frame"))},
		{d.SecretsBlocks, "secrets blocks", fmt.Sprintf("%s over the bound on key log bytes, left unread: their TLS connections may show no key", plural(d.SecretsBlocks, "pcapng secrets block"))},
		{d.OversizedFrames, "oversized frames", fmt.Sprintf("%s (%d produce requests) over --max-frame-bytes, passed over: re-sends inside them not seen", plural(d.OversizedFrames, "Kafka frame"), d.OversizedProduce)},
		{d.OtherTopicsBatches, "topics bound", fmt.Sprintf("reached: %s to topics beyond the first %d counted together as %s", plural(d.OtherTopicsBatches, "batch"), detect.MaxTopics, detect.OtherTopics)},
		{d.PrintsCut, "record prints cut", fmt.Sprintf("%s of more records than are fingerprinted per batch matched by their first ones only", plural(d.PrintsCut, "batch"))},
		{d.PrintsSkipped, "record prints bound", fmt.Sprintf("reached: %s of unanswered requests not matched by record", plural(d.PrintsSkipped, "batch"))},
		{d.EvictedConnections, "connections bound", fmt.Sprintf("reached: %s least recently active closed early (--max-connections); their unanswered requests end as evicted", plural(d.EvictedConnections, "connection"))},
		{d.ReorderGivenUp, "reorder window", fmt.Sprintf("ran out %s: those holes taken as lost", plural(d.ReorderGivenUp, "time"))},
	}
	var out [][]string
	for _, r := range rows {
		if r.n > 0 {
			out = append(out, []string{r.name, r.text})
		}
	}
	return out
}

// jsonDropped is the summary's "dropped" object; omitted when nil.
type jsonDropped struct {
	OversizedPackets  int64 `json:"oversized_packets,omitempty"`
	OversizedBytes    int64 `json:"oversized_bytes,omitempty"`
	CorruptBatches    int64 `json:"corrupt_batches,omitempty"`
	DecompressSkipped int64 `json:"decompress_skipped,omitempty"`
	BufferDrops       int64 `json:"buffer_drops,omitempty"`
	ReorderGivenUp    int64 `json:"reorder_given_up,omitempty"`
	SecretsBlocks     int64 `json:"secrets_blocks_dropped,omitempty"`
	OversizedFrames   int64 `json:"oversized_frames,omitempty"`
	OversizedProduce  int64 `json:"oversized_produce_requests,omitempty"`
	OtherTopics       int64 `json:"other_topics_batches,omitempty"`
	PrintsCut         int64 `json:"record_prints_cut,omitempty"`
	PrintsSkipped     int64 `json:"record_prints_skipped,omitempty"`
	EvictedConns      int64 `json:"evicted_connections,omitempty"`
}

// toJSONDropped is d as the summary's "dropped" object, nil when all zero.
func toJSONDropped(d Dropped) *jsonDropped {
	if d == (Dropped{}) {
		return nil
	}
	return &jsonDropped{OversizedPackets: d.OversizedPackets, OversizedBytes: d.OversizedBytes,
		CorruptBatches: d.CorruptBatches, DecompressSkipped: d.DecompressSkipped,
		BufferDrops: d.BufferDrops, ReorderGivenUp: d.ReorderGivenUp, SecretsBlocks: d.SecretsBlocks,
		OversizedFrames: d.OversizedFrames, OversizedProduce: d.OversizedProduce, OtherTopics: d.OtherTopicsBatches,
		PrintsCut: d.PrintsCut, PrintsSkipped: d.PrintsSkipped, EvictedConns: d.EvictedConnections}
}
