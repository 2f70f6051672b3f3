package decode

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigProduce is a produce request frame of version v over scanMinFrame,
// correlation ID corr, its records' values starting with tag: two topics
// of two partitions, each of three RecordBatches of about 10 KB, the
// second of partition 1 corrupt (its CRC wrong).
func bigProduce(v int16, corr int32, tag string) ([]byte, int) {
	return bigProduceAcks(v, -1, corr, tag)
}

// bigProduceAcks is bigProduce with acks.
func bigProduceAcks(v, acks int16, corr int32, tag string) ([]byte, int) {
	var parts []part
	batches := 0
	for _, topic := range []string{"alpha", "beta"} {
		for p := range int32(2) {
			var recs []byte
			for b := range 3 {
				rb := compressedBatch(0, 300, taggedRecords(fmt.Sprintf("%s-%s-%d-%d", tag, topic, p, b), 300))
				if p == 1 && b == 1 {
					rb[len(rb)-1] ^= 0xff
				}
				recs = append(recs, rb...)
				batches++
			}
			parts = append(parts, part{topic, p, recs})
		}
	}
	return requestFrame(produceRequest(v, acks, parts...), corr, "scan"), batches
}

// taggedRecords is n records whose values start with tag.
func taggedRecords(tag string, n int) []byte {
	var out []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s value %d", tag, i)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// TestScanSums: a produce request that spans segments is decoded to the
// same batches as the same frame whole (CRC checks, Corrupt, fingerprints),
// for every version that holds RecordBatches and any segment size; and the
// scan summed every batch as the segments came.
func TestScanSums(t *testing.T) {
	for _, v := range []int16{3, 7, 8, 9, 12, 13} {
		frame, batches := bigProduce(v, 7, "x")
		if len(frame) < scanMinFrame {
			t.Fatalf("v%d: a frame of %d bytes is not scanned", v, len(frame))
		}
		opts := Options{RecordPrints: true}
		want, wantStats, _ := decodeScript(opts, []msg{{fromClient: true, frame: frame}}, whole)
		if len(want) != 1 || len(want[0].Batches) != batches || wantStats.CorruptBatches != 2 {
			t.Fatalf("v%d whole: %d exchanges, stats %+v", v, len(want), wantStats)
		}
		for _, seg := range []int{1448, 4096, 65483, len(frame) - 1} {
			var s sink
			d := New(&s, opts)
			c := d.NewStream(client, broker, t0)
			for _, p := range chunks(seg)(frame) {
				c.Data(true, p, t0)
			}
			if seg < len(frame)-1 && d.scanHits != batches {
				t.Errorf("v%d, segments of %d: %d batches summed as they came, want %d", v, seg, d.scanHits, batches)
			}
			c.Close(t0)
			if len(s.xs) != 1 {
				t.Fatalf("v%d, segments of %d: %d exchanges", v, seg, len(s.xs))
			}
			if !reflect.DeepEqual(s.xs[0].Batches, want[0].Batches) {
				t.Errorf("v%d, segments of %d: batches differ from the frame whole's", v, seg)
			}
			if st := d.Stats(); st != wantStats {
				t.Errorf("v%d, segments of %d: stats %+v, whole %+v", v, seg, st, wantStats)
			}
		}
	}
}

// TestScanFrameAfterLarger: the scan of a request that follows a larger
// one on its connection sums its batches as they come too. The scan's
// position was kept from the frame before: a frame shorter than it was
// summed by nothing (of a real kgo capture's 1407 batches, 210 were).
func TestScanFrameAfterLarger(t *testing.T) {
	for _, v := range []int16{3, 9, 13} {
		large, n1 := bigProduce(v, 7, "a much longer tag, to make the values of the first request longer")
		small, n2 := bigProduce(v, 8, "x")
		if len(small) >= len(large) || len(small) < scanMinFrame {
			t.Fatalf("v%d: frames of %d and %d bytes", v, len(large), len(small))
		}
		var s sink
		d := New(&s, Options{RecordPrints: true})
		c := d.NewStream(client, broker, t0)
		for _, frame := range [][]byte{large, small} {
			for _, p := range chunks(4096)(frame) {
				c.Data(true, p, t0)
			}
		}
		c.Close(t0)
		if d.scanHits != n1+n2 {
			t.Errorf("v%d: %d batches summed as they came, want %d", v, d.scanHits, n1+n2)
		}
	}
}

// TestScanMangled: a large request with bytes changed anywhere (its
// structure, its batches' lengths and magic) decodes cut in segments as it
// does whole, whatever the scan made of it.
func TestScanMangled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, v := range []int16{3, 9, 13} {
		frame, _ := bigProduce(v, 7, "m")
		for i := range 300 {
			bad := slices.Clone(frame)
			for range 1 + i%4 {
				at := 4 + rng.IntN(len(bad)-4)
				if i%3 == 0 {
					at = 4 + rng.IntN(200) // the header and the first lengths
				}
				bad[at] = byte(rng.IntN(256))
			}
			opts := Options{RecordPrints: true}
			want, wantStats, _ := decodeScript(opts, []msg{{fromClient: true, frame: bad}}, whole)
			got, stats, _ := decodeScript(opts, []msg{{fromClient: true, frame: bad}}, chunks(1000+rng.IntN(60000)))
			if len(got) != len(want) || stats != wantStats {
				t.Fatalf("v%d mangled %d: %d exchanges, stats %+v; whole %d, %+v", v, i, len(got), stats, len(want), wantStats)
			}
			for j := range got {
				if !reflect.DeepEqual(got[j].Batches, want[j].Batches) {
					t.Fatalf("v%d mangled %d: batches differ", v, i)
				}
			}
		}
	}
}
