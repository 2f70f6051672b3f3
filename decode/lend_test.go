package decode

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// printingSink fingerprints every batch during the Produce call, as detect
// does for those it matches, and keeps a copy of the prints; with detach,
// it detaches the batches to a Printer of its own instead, as pipeline's
// sharded run does (decodePrinting fingerprints them after the script).
type printingSink struct {
	detach *Printer
	xs     []*Exchange
	prints [][]RecordPrint
	lent   int // exchanges whose batches' bytes were in their frame's array when handed on
}

func (s *printingSink) Produce(x *Exchange) {
	s.xs = append(s.xs, x)
	if slices.ContainsFunc(x.Batches, func(b Batch) bool { return b.lent }) {
		s.lent++
	}
	for i := range x.Batches {
		b := &x.Batches[i]
		if s.detach != nil {
			b.Detach(s.detach)
			continue
		}
		s.prints = append(s.prints, slices.Clone(b.RecordPrints()))
	}
}

// decodePrinting feeds script, each frame cut by split, to a Decoder with
// opts and a printingSink (detaching, if detach, and printing after the
// script), and returns both.
func decodePrinting(script []msg, opts Options, detach bool, split func([]byte) [][]byte) (*printingSink, *Decoder) {
	s := &printingSink{}
	if detach {
		s.detach = NewPrinter(opts)
	}
	d := New(s, opts)
	feed(d, script, split, false)
	if detach {
		for _, x := range s.xs {
			for i := range x.Batches {
				s.prints = append(s.prints, slices.Clone(x.Batches[i].RecordPrints()))
			}
		}
	}
	return s, d
}

// TestLendFrame: a produce request that spans segments lends its frame's
// array to its exchange instead of copying its batches out, and the prints
// are those of the same frames decoded whole (copied by keepRaw), though
// the next requests of the connection come before the answers; every
// byte kept is given back once the exchanges are done, and the arrays
// return as spares (detached bytes are copied), but for that of an acks=0
// request, handed on at once, which stays with its direction.
func TestLendFrame(t *testing.T) {
	const v = 9
	tests := []struct {
		name     string
		acks     int16
		maxPrint int
		detach   bool
		wantLent int
	}{
		{name: "answered after the next requests", acks: -1, wantLent: 3},
		// The array stays with the direction: the third frame, smaller
		// than the second, is cut from its array, over a quarter larger
		// than it, and copied.
		{name: "acks=0, handed on at once", acks: 0, wantLent: 2},
		{name: "over MaxPrintBytes", acks: -1, maxPrint: 120 << 10, wantLent: 0},
		{name: "detached", acks: -1, detach: true, wantLent: 3},
		{name: "acks=0, detached", acks: 0, detach: true, wantLent: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var script []msg
			for i, tag := range []string{"first", "second request, longer values", "third"} {
				frame, _ := bigProduceAcks(v, tt.acks, int32(i), tag)
				script = append(script, msg{fromClient: true, frame: frame})
			}
			if tt.acks != 0 {
				for i := range 3 {
					resp := produceResponse(v, answer{"alpha", 0, 0, 10}, answer{"alpha", 1, 0, 20}, answer{"beta", 0, 0, 30}, answer{"beta", 1, 0, 40})
					script = append(script, msg{frame: responseFrame(resp, int32(i))})
				}
			}
			opts := Options{RecordPrints: true, MaxPrintBytes: tt.maxPrint}
			want, _ := decodePrinting(script, opts, tt.detach, whole)
			if want.lent != 0 || len(want.xs) != 3 {
				t.Fatalf("frames whole: %d exchanges, %d lent", len(want.xs), want.lent)
			}
			for i, p := range want.prints {
				if len(p) < 299 && tt.maxPrint == 0 { // the corrupt batches' last record does not read
					t.Fatalf("frames whole: batch %d has %d prints, want 300", i, len(p))
				}
			}
			got, d := decodePrinting(script, opts, tt.detach, chunks(4096))
			if got.lent != tt.wantLent {
				t.Errorf("%d exchanges lent their frame, want %d", got.lent, tt.wantLent)
			}
			if len(got.prints) != len(want.prints) {
				t.Fatalf("%d batches printed, want %d", len(got.prints), len(want.prints))
			}
			for i := range want.prints {
				if !slices.Equal(got.prints[i], want.prints[i]) {
					t.Errorf("batch %d: prints differ from the frame whole's", i)
				}
			}
			if d.raw.held != 0 || d.raw.eager != 0 || d.held != 0 || d.lend.arr != nil {
				t.Errorf("after the run: kept %d bytes, %d eager prints, %d buffered, lend %v", d.raw.held, d.raw.eager, d.held, d.lend.arr != nil)
			}
			spared := slices.ContainsFunc(d.spares, func(a []byte) bool { return cap(a) >= len(script[0].frame) })
			if wantSpared := tt.wantLent > 0 && tt.acks != 0; spared != wantSpared {
				t.Errorf("a frame's array among the spares: %v, want %v", spared, wantSpared)
			}
		})
	}
}

// TestLendRandom: random connections of large produce requests (acks 0
// and all, sizes that grow and shrink), small ones between, answers
// given, left out (a later one completes them) or cut off by the end,
// bounds on pending requests and kept bytes, batches printed in the
// Sink's call or detached and printed afterwards, each cut into random
// segments: the prints are those of the same frames decoded whole, and
// every byte kept or buffered is given back at the end.
func TestLendRandom(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 17))
		var script []msg
		corr := int32(0)
		var unanswered []int32
		for range 2 + rng.IntN(5) {
			corr++
			acks := int16(-1)
			if rng.IntN(3) == 0 {
				acks = 0
			}
			frame, _ := bigProduceAcks(9, acks, corr, strings.Repeat("v", 1+rng.IntN(60)))
			script = append(script, msg{fromClient: true, frame: frame})
			if acks != 0 {
				unanswered = append(unanswered, corr)
			}
			if rng.IntN(3) == 0 {
				corr++
				script = append(script, produceMsg(corr))
				unanswered = append(unanswered, corr)
			}
			for len(unanswered) > 0 && rng.IntN(2) == 0 {
				c := unanswered[0]
				unanswered = unanswered[1:]
				if rng.IntN(4) == 0 {
					continue // never answered: a later answer completes it
				}
				resp := produceResponse(9, answer{"alpha", 0, 0, 10}, answer{"beta", 1, 0, 40}, answer{"t", 0, 0, 1})
				script = append(script, msg{frame: responseFrame(resp, c)})
			}
		}
		opts := Options{RecordPrints: true}
		bounded := rng.IntN(3) == 0
		if bounded {
			opts.MaxPrintBytes = 150<<10 + rng.IntN(300<<10)
		}
		if rng.IntN(3) == 0 {
			opts.MaxPending = 1 + rng.IntN(3)
		}
		detach := rng.IntN(2) == 0
		seg := 1000 + rng.IntN(70000)
		want, _ := decodePrinting(script, opts, detach, whole)
		got, d := decodePrinting(script, opts, detach, chunks(seg))
		name := fmt.Sprintf("seed %d (segments of %d, detach %v, MaxPending %d, MaxPrintBytes %d)", seed, seg, detach, opts.MaxPending, opts.MaxPrintBytes)
		if len(got.prints) != len(want.prints) {
			t.Fatalf("%s: %d batches printed, want %d", name, len(got.prints), len(want.prints))
		}
		for i := range want.prints {
			if bounded && (len(got.prints[i]) == 0 || len(want.prints[i]) == 0) {
				continue // skipped at the bound, which counts a lent array whole
			}
			if !slices.Equal(got.prints[i], want.prints[i]) {
				t.Errorf("%s: batch %d: prints differ from the frames decoded whole", name, i)
			}
		}
		if d.raw.held != 0 || d.raw.eager != 0 || d.held != 0 || d.lend.arr != nil || d.lend.taken {
			t.Errorf("%s: after the run: kept %d bytes, %d eager prints, %d buffered, lend %v/%v", name, d.raw.held, d.raw.eager, d.held, d.lend.arr != nil, d.lend.taken)
		}
		if seed == 0 && got.lent == 0 {
			t.Errorf("%s: no frame lent", name)
		}
	}
}
