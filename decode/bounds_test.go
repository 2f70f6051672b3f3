package decode

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestStateBounds checks that what a Decoder keeps across frames and
// connections stays bounded however many distinct names the wire carries:
// client.ids per connection, interned topic names, topic IDs.
func TestStateBounds(t *testing.T) {
	tests := []struct {
		name  string
		n     int // distinct values fed
		feed  func(d *Decoder, n int)
		check func(t *testing.T, d *Decoder)
	}{{
		name: "client.ids of one connection",
		n:    5 * maxClientIDs,
		feed: func(d *Decoder, n int) {
			var script []msg
			for i := range n {
				id := fmt.Sprintf("client-%d", i)
				script = append(script, msg{fromClient: true, frame: requestFrame(produceRequest(9, 0, part{"t", 0, recordBatch(1, 0, 0, 1, "r")}), int32(i), id)})
			}
			feed(d, script, whole, false)
		},
		check: func(t *testing.T, d *Decoder) {
			cs := d.Connections()
			if len(cs) != 1 || len(cs[0].ClientIDs) != maxClientIDs {
				t.Fatalf("client.ids listed: %d, want %d", len(cs[0].ClientIDs), maxClientIDs)
			}
			if got := cs[0].ClientIDs[maxClientIDs-1]; got != fmt.Sprintf("client-%d", maxClientIDs-1) {
				t.Errorf("last listed client.id %q", got)
			}
		},
	}, {
		name: "interned topic names",
		n:    maxNames + 100,
		feed: func(d *Decoder, n int) {
			for i := range n {
				if s := fmt.Sprintf("topic-%d", i); d.intern(s) != s {
					t.Fatalf("intern changed %q", s)
				}
			}
		},
		check: func(t *testing.T, d *Decoder) {
			if len(d.names) > maxNames {
				t.Errorf("%d names interned, bound %d", len(d.names), maxNames)
			}
		},
	}, {
		name: "topic ids from metadata",
		n:    maxTopicIDs + 100,
		feed: func(d *Decoder, n int) {
			for i := range n {
				d.learnTopic(topicID(fmt.Sprint(i)), fmt.Sprint(i), nil, time.Time{})
			}
		},
		check: func(t *testing.T, d *Decoder) {
			if len(d.shared.topicIDs) > maxTopicIDs {
				t.Errorf("%d topic ids kept, bound %d", len(d.shared.topicIDs), maxTopicIDs)
			}
			if d.shared.topicIDs[topicID("0")] != "0" {
				t.Errorf("first topic id forgotten")
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s sink
			d := New(&s, Options{})
			tt.feed(d, tt.n)
			tt.check(t, d)
		})
	}
}

// TestClientIDsBeyondBound checks that exchanges keep their own client.id
// once the connection lists no more of them.
func TestClientIDsBeyondBound(t *testing.T) {
	var script []msg
	n := maxClientIDs + 3
	for i := range n {
		script = append(script, msg{fromClient: true, frame: requestFrame(produceRequest(9, 0, part{"t", 0, recordBatch(1, 0, 0, 1, "r")}), int32(i), fmt.Sprintf("c%d", i))})
	}
	xs, _, _ := decodeScript(Options{}, script, whole)
	if len(xs) != n {
		t.Fatalf("%d exchanges, want %d", len(xs), n)
	}
	for i, x := range xs {
		if x.ClientID == nil || *x.ClientID != fmt.Sprintf("c%d", i) {
			t.Errorf("exchange %d client.id %v", i, x.ClientID)
		}
	}
}

// TestArrayCountAmplification checks that a produce request or response
// announcing far more topics or partitions than its bytes can hold is
// refused before kmsg allocates an element per announced topic (tens of
// bytes each for one or two bytes of frame).
func TestArrayCountAmplification(t *testing.T) {
	const body = 1 << 20
	uvar := func(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
	hostileReq := func(v int16) []byte {
		h := []byte{0, 0, 0, 0, 0, 0, 0, byte(v), 0, 0, 0, 1, 0, 1, 'c'}
		if v >= 9 {
			h = append(h, 0)    // header tags
			h = append(h, 0)    // null transactional id
			h = append(h, 0, 1) // acks
			h = append(h, 0, 0, 0x75, 0x30)
			h = uvar(h, body/2+1)
		} else {
			h = append(h, 0xff, 0xff) // null transactional id (v3+)
			h = append(h, 0, 1, 0, 0, 0x75, 0x30)
			h = binary.BigEndian.AppendUint32(h, body/2)
		}
		h = append(h, make([]byte, body)...)
		binary.BigEndian.PutUint32(h, uint32(len(h)-4))
		return h
	}
	hostileResp := func(corr int32) []byte {
		h := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(corr))
		h = append(h, 0) // response header tags (flexible)
		h = uvar(h, body/2+1)
		h = append(h, make([]byte, body)...)
		binary.BigEndian.PutUint32(h, uint32(len(h)-4))
		return h
	}
	// One topic announcing as many partitions as fit at one byte each
	// (kmsg's own check), each at least 6 or 8 on the wire.
	partsReq := func(v int16) []byte {
		h := []byte{0, 0, 0, 0, 0, 0, 0, byte(v), 0, 0, 0, 1, 0, 1, 'c'}
		if v >= 9 {
			h = append(h, 0, 0, 0, 1, 0, 0, 0x75, 0x30)
			h = uvar(h, 2)        // one topic
			h = append(h, 2, 't') // compact name
			h = uvar(h, body/2+1) // partitions
		} else {
			h = append(h, 0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30)
			h = binary.BigEndian.AppendUint32(h, 1)
			h = append(h, 0, 1, 't')
			h = binary.BigEndian.AppendUint32(h, body/2)
		}
		h = append(h, make([]byte, body)...)
		binary.BigEndian.PutUint32(h, uint32(len(h)-4))
		return h
	}
	partsResp := func(corr int32) []byte {
		h := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(corr))
		h = append(h, 0)      // response header tags
		h = uvar(h, 2)        // one topic
		h = append(h, 2, 't') // compact name
		h = uvar(h, body/2+1) // partitions
		h = append(h, make([]byte, body)...)
		binary.BigEndian.PutUint32(h, uint32(len(h)-4))
		return h
	}
	req := requestFrame(produceRequest(9, 1, part{"t", 0, recordBatch(1, 0, 0, 1, "r")}), 7, "c")
	tests := []struct {
		name   string
		script []msg
	}{
		{"request v9", []msg{{fromClient: true, frame: hostileReq(9)}}},
		{"request v3", []msg{{fromClient: true, frame: hostileReq(3)}}},
		{"response v9", []msg{{fromClient: true, frame: req}, {fromClient: false, frame: hostileResp(7)}}},
		{"request v9 partitions", []msg{{fromClient: true, frame: partsReq(9)}}},
		{"request v3 partitions", []msg{{fromClient: true, frame: partsReq(3)}}},
		{"response v9 partitions", []msg{{fromClient: true, frame: req}, {fromClient: false, frame: partsResp(7)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, st, d := decodeScript(Options{}, tt.script, whole)
			runtime.ReadMemStats(&after)
			if st.Malformed == 0 {
				t.Errorf("not counted as malformed: %+v", st)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 4*body {
				t.Errorf("allocated %d bytes for a %d byte frame", n, body)
			}
			if c := cap(d.preq.Topics) + cap(d.presp.Topics); c > 1024 {
				t.Errorf("decoder keeps room for %d topics", c)
			}
		})
	}
}

// TestEvict: a connection evicted by capture (capture.Evicter) ends its
// pending produce requests as evicted, not as closed: their answers may
// still be in the capture.
func TestEvict(t *testing.T) {
	var s sink
	d := New(&s, Options{})
	script := []msg{{fromClient: true, frame: requestFrame(produceRequest(7, -1, part{"t", 0, recordBatch(-1, -1, -1, 1, "r")}), 1, "c")}}
	c := feed(d, script, whole, true)
	c.Evict(t0.Add(time.Second))
	if len(s.xs) != 1 || s.xs[0].NoResponse != NoResponseEvicted {
		t.Fatalf("exchanges %+v, want one ended as evicted", s.xs)
	}
}
