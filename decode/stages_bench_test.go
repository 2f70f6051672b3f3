package decode

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFraming is the framing stage alone: request and response frames
// of an API decode does not look into (Heartbeat), so that only the size
// fields, the request header and the pending request are handled. One op
// is one request and its response, each in one Data call.
func BenchmarkFraming(b *testing.B) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = "bench-group", "member-1", 7
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = 4
	const n = 256
	var script []msg
	for i := range int32(n) {
		script = append(script, msg{fromClient: true, frame: requestFrame(req, i, "bench")},
			msg{frame: responseFrame(resp, i)})
	}
	d := New(nil, Options{})
	c := d.NewStream(client, broker, t0)
	size := 0
	for _, m := range script {
		size += len(m.frame)
	}
	b.SetBytes(int64(size / n))
	loopExchanges(b, c, script)
	if st := d.Stats(); st.Malformed != 0 || st.Unmatched != 0 {
		b.Fatalf("stats %+v", st)
	}
}

// loopExchanges feeds c the request and response pairs of script, one pair
// an op, round and round.
func loopExchanges(b *testing.B, c *Conn, script []msg) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := &script[i%len(script)]
		c.Data(m.fromClient, m.frame, t0)
		m = &script[i%len(script)+1]
		c.Data(m.fromClient, m.frame, t0)
		i += 2
	}
}

// BenchmarkProduceParse is the produce stage: a ProduceRequest of several
// partitions (one 16 KiB record batch each) and its response, parsed into
// an Exchange with kmsg and the batch walk, per Produce version. One op is
// one exchange.
func BenchmarkProduceParse(b *testing.B) {
	payload := strings.Repeat("v", 16<<10)
	for _, v := range []int16{3, 9, 13} {
		for _, parts := range []int{1, 8} {
			b.Run(fmt.Sprintf("v%d/partitions=%d", v, parts), func(b *testing.B) {
				var script []msg
				size := 0
				for i := range int32(64) {
					var ps []part
					var as []answer
					for p := range int32(parts) {
						ps = append(ps, part{"bench", p, recordBatch(-1, -1, -1, 16, payload)})
						as = append(as, answer{"bench", p, 0, int64(i)})
					}
					script = append(script, msg{fromClient: true, frame: requestFrame(produceRequest(v, -1, ps...), i, "bench")},
						msg{frame: responseFrame(produceResponse(v, as...), i)})
					size += len(script[len(script)-2].frame) + len(script[len(script)-1].frame)
				}
				d := New(nil, Options{})
				if v >= 13 {
					d.shared.topicIDs[topicID("bench")] = "bench"
				}
				c := d.NewStream(client, broker, t0)
				b.SetBytes(int64(size / 64))
				loopExchanges(b, c, script)
				if st := d.Stats(); st.Malformed != 0 || st.ProduceResponses == 0 {
					b.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

// midFrame is a connection and a 256 KiB produce request cut into 1400 byte
// pieces (an Ethernet capture's segments), with its response.
type midFrame struct {
	d      *Decoder
	c      *Conn
	frame  []byte
	pieces [][]byte // of frame
	resp   []byte
	corr   int32
	next   int // the piece Data takes next
}

func newMidFrame() *midFrame {
	m := &midFrame{d: New(nil, Options{})}
	m.c = m.d.NewStream(client, broker, t0)
	m.frame = requestFrame(produceRequest(9, -1, part{"bench", 0, recordBatch(-1, -1, -1, 64, strings.Repeat("v", 256<<10))}), 0, "bench")
	for f := m.frame; len(f) > 0; {
		n := min(1400, len(f))
		m.pieces = append(m.pieces, f[:n])
		f = f[n:]
	}
	m.resp = responseFrame(produceResponse(9, answer{"bench", 0, 0, 0}), 0)
	return m
}

// build sets the correlation ID m.corr in the request and its response.
func (m *midFrame) build() {
	binary.BigEndian.PutUint32(m.frame[8:], uint32(m.corr)) // after size, key, version
	binary.BigEndian.PutUint32(m.resp[4:], uint32(m.corr))
	m.next = 0
}

// piece hands the next piece that completes no frame: when only the last
// piece of the request is left, the request and its response are completed
// first (done says so) and a new request begins.
func (m *midFrame) piece() (done bool) {
	if m.next == len(m.pieces)-1 {
		m.c.Data(true, m.pieces[m.next], t0)
		m.c.Data(false, m.resp, t0)
		m.corr++
		m.build()
		done = true
	}
	m.c.Data(true, m.pieces[m.next], t0)
	m.next++
	return done
}

// TestMidFrameNoAllocs: a segment in the middle of a Kafka frame (the
// frame started in an earlier segment and ends in a later one) allocates
// nothing once the connection has seen a frame of that size: its bytes are
// appended to the direction's frame buffer, kept between frames up to
// keepBufBytes.
func TestMidFrameNoAllocs(t *testing.T) {
	m := newMidFrame()
	for m.corr < 2 { // two whole exchanges size the buffers
		m.piece()
	}
	// The first piece of the third request is in: pieces 1 to len-2 are
	// mid-frame, and AllocsPerRun calls once more than it is told.
	if n := testing.AllocsPerRun(len(m.pieces)-3, func() {
		if m.piece() {
			t.Fatal("a frame completed")
		}
	}); n != 0 {
		t.Errorf("%.2f allocations per mid-frame segment, want 0", n)
	}
	if st := m.d.Stats(); st.Malformed != 0 || st.ProduceResponses != 2 {
		t.Errorf("stats %+v", st)
	}
}

// BenchmarkMidFrame is the hot path of TestMidFrameNoAllocs with times: one
// op is one 1400 byte segment in the middle of a produce request frame;
// the segments that complete a frame, and the responses, are fed with the
// timer stopped.
func BenchmarkMidFrame(b *testing.B) {
	m := newMidFrame()
	for m.corr < 2 {
		m.piece()
	}
	b.SetBytes(1400)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if m.next == len(m.pieces)-1 {
			b.StopTimer()
			m.piece()
			b.StartTimer()
			continue
		}
		m.piece()
	}
}
