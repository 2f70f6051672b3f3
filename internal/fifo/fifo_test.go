package fifo

import (
	"math/rand/v2"
	"testing"
)

// TestFifo checks the chunked queue against a plain slice over runs of
// pushes and pops that cross chunk boundaries, empty the queue and reset it.
func TestFifo(t *testing.T) {
	tests := []struct {
		name  string
		seed  uint64
		ops   int
		pushP float64 // chance an op is a push
	}{
		{"mostly pushes", 1, 5000, 0.8},
		{"balanced", 2, 20000, 0.5},
		{"drains often", 3, 20000, 0.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 0))
			var q Queue[int]
			var model []int
			next := 0
			for i := range tc.ops {
				switch {
				case i%7919 == 7918:
					q.Reset()
					model = model[:0]
				case r.Float64() < tc.pushP:
					q.Push(next)
					model = append(model, next)
					next++
				case len(model) > 0:
					got, ok := q.Front()
					if !ok || got != model[0] {
						t.Fatalf("op %d: front %d %v, want %d", i, got, ok, model[0])
					}
					q.Pop()
					model = model[1:]
				default:
					if _, ok := q.Front(); ok {
						t.Fatalf("op %d: front of an empty queue", i)
					}
				}
				if q.Len() != len(model) {
					t.Fatalf("op %d: len %d, want %d", i, q.Len(), len(model))
				}
			}
			for len(model) > 0 {
				got, _ := q.Front()
				if got != model[0] {
					t.Fatalf("drain: front %d, want %d", got, model[0])
				}
				q.Pop()
				model = model[1:]
			}
			if len(q.chunks) > 0 {
				t.Errorf("drained queue holds %d chunks", len(q.chunks))
			}
		})
	}
}

// TestFifoReusesChunks checks that a queue kept at a steady length stops
// allocating: chunks read to their end serve the next pushes.
func TestFifoReusesChunks(t *testing.T) {
	var q Queue[[3]int32]
	for i := range 3 * chunk {
		q.Push([3]int32{int32(i)})
	}
	allocs := testing.AllocsPerRun(10, func() {
		for range 5 * chunk {
			q.Push([3]int32{})
			q.Pop()
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run at a steady length, want 0", allocs)
	}
}
