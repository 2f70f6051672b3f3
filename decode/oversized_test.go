package decode

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOversizedFrames: a frame over Options.MaxHeldFrameBytes is passed
// over, never held: its response stays matched, the frames after it on the
// connection decode, and what it costs in allocation does not grow with its
// size, however its bytes are cut into Data calls. With the bound raised,
// the same frame is decoded whole.
func TestOversizedFrames(t *testing.T) {
	const held = 1 << 20
	big := recordBatch(1, 0, 0, 1, strings.Repeat("v", 4*held))
	small := recordBatch(2, 0, 0, 1, "after")
	// The connection is synced by its first frame, as after a handshake;
	// a candidate frame start while unsynced is bounded otherwise (probe).
	script := []msg{
		{fromClient: true, frame: requestFrame(kmsg.NewPtrApiVersionsRequest(), 0, "c")},
		{fromClient: true, frame: requestFrame(produceRequest(7, -1, part{"t", 0, big}), 1, "c")},
		{fromClient: false, frame: responseFrame(produceResponse(7, answer{topic: "t", baseOffset: 10}), 1)},
		{fromClient: true, frame: requestFrame(produceRequest(7, -1, part{"t", 0, small}), 2, "c")},
		{fromClient: false, frame: responseFrame(produceResponse(7, answer{topic: "t", baseOffset: 11}), 2)},
	}
	splits := []struct {
		name  string
		split func([]byte) [][]byte
	}{
		{"whole", whole},
		{"cut in the header", cutAt(7)},
		{"cut after the header", cutAt(40)},
		{"64 KiB segments", chunks(64 << 10)},
	}
	for _, sp := range splits {
		t.Run(sp.name, func(t *testing.T) {
			var xs []*Exchange
			var st Stats
			n := allocated(func() { xs, st, _ = decodeScript(Options{MaxHeldFrameBytes: held}, script, sp.split) })
			if st.OversizedFrames != 1 || st.OversizedProduce != 1 || st.OversizedBytes != int64(len(script[1].frame)) {
				t.Errorf("oversized frames %d, produce %d, bytes %d; want 1, 1, %d", st.OversizedFrames, st.OversizedProduce, st.OversizedBytes, len(script[1].frame))
			}
			if st.Unmatched != 0 || st.Malformed != 0 || st.Resyncs != 0 {
				t.Errorf("unmatched %d, malformed %d, resyncs %d; want 0", st.Unmatched, st.Malformed, st.Resyncs)
			}
			if len(xs) != 1 || xs[0].CorrelationID != 2 || xs[0].NoResponse != "" || xs[0].Batches[0].Response == nil {
				t.Fatalf("exchanges %+v, want the answered one after the oversized frame", xs)
			}
			if n > held {
				t.Errorf("allocated %d bytes for a frame of %d passed over", n, len(script[1].frame))
			}
		})
	}
	t.Run("bound raised", func(t *testing.T) {
		xs, st, _ := decodeScript(Options{MaxHeldFrameBytes: 8 * held}, script, chunks(64<<10))
		if st.OversizedFrames != 0 || len(xs) != 2 {
			t.Errorf("oversized %d, exchanges %d; want 0, 2", st.OversizedFrames, len(xs))
		}
	})
}

// chunks delivers a frame in calls of n bytes.
func chunks(n int) func([]byte) [][]byte {
	return func(b []byte) [][]byte {
		var out [][]byte
		for len(b) > n {
			out = append(out, b[:n])
			b = b[n:]
		}
		return append(out, b)
	}
}
