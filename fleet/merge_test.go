package fleet

import (
	"testing"
	"time"
)

func ev(host string, ms int64) Event {
	return Event{Kind: KindAttempt, Header: Header{Host: host, Run: 1, At: time.Unix(0, ms*1e6)}}
}

// TestMerger: records of two hosts come interleaved as fetched; they go
// out in capture-time order once both hosts' watermarks passed them, or
// once the newest is Lateness past them; a record after its time is late.
func TestMerger(t *testing.T) {
	m := NewMerger(MergeOptions{Lateness: 100 * time.Millisecond})
	m.Add(ev("a", 10), 0)
	m.Add(ev("b", 5), 1)
	m.Add(ev("a", 30), 0)
	out := m.Release(nil, false)
	if len(out) != 1 || out[0].Host != "b" {
		t.Fatalf("released %v, want b@5 only (b's watermark is 5)", times(out))
	}
	m.Add(ev("b", 25), 1)
	out = m.Release(nil, false)
	if got := times(out); len(got) != 2 || got[0] != 10 || got[1] != 25 {
		t.Fatalf("released %v, want [10 25]", got)
	}
	// b goes quiet: a's records wait for it Lateness at most.
	m.Add(ev("a", 200), 0)
	out = m.Release(nil, false)
	if got := times(out); len(got) != 1 || got[0] != 30 {
		t.Fatalf("released %v, want [30] (200-100 lets 30 go, not 200)", got)
	}
	// A record of b older than what was released is late.
	m.Add(ev("b", 40), 1)
	out = m.Release(nil, false)
	if got := times(out); len(got) != 1 || got[0] != 40 {
		t.Fatalf("released %v, want the late 40", got)
	}
	hs := m.Hosts()
	if len(hs) != 2 || hs[1].Late != 1 || hs[1].MaxLate != 60*time.Millisecond {
		t.Errorf("hosts %+v: want b late once by 60ms", hs)
	}
	if hs[1].MaxLag < 100*time.Millisecond {
		t.Errorf("b's lag %v, want >= 100ms", hs[1].MaxLag)
	}
	if out = m.Release(nil, true); len(out) != 1 || out[0].At.UnixMilli() != 200 {
		t.Errorf("all: %v", times(out))
	}
	// A dropped partition's held records never go.
	m.Add(ev("a", 300), 0)
	m.Add(ev("c", 301), 2)
	m.Drop(0)
	if got := times(m.Release(nil, true)); len(got) != 1 || got[0] != 301 {
		t.Errorf("after Drop: %v, want [301]", got)
	}
}

func TestMergerMaxHeld(t *testing.T) {
	m := NewMerger(MergeOptions{Lateness: time.Hour, MaxHeld: 2})
	m.Add(ev("slow", 1), 1)
	for i := int64(10); i < 15; i++ {
		m.Add(ev("a", i), 0)
	}
	out := m.Release(nil, false)
	if m.Held() != 2 || len(out) != 4 {
		t.Fatalf("held %d, released %v", m.Held(), times(out))
	}
}

func times(evs []Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.At.UnixMilli())
	}
	return out
}
