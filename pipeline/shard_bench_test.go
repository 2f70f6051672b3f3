package pipeline

import (
	"fmt"
	"testing"
)

// BenchmarkAnalyzeWorkers is BenchmarkAnalyze with one worker (the single
// run) and sharded over 2 and 3 workers; sharded-1 is the sharded run
// with one worker (the reader and merger on one goroutine, the
// worker on another), which --workers never picks.
func BenchmarkAnalyzeWorkers(b *testing.B) {
	path, m, size := benchInput(b)
	o := Options{Sniff: true, RecordMatch: true}
	st := stages{det: o.detectOptions(), dec: o.decodeOptions(1), asm: o.assemblerOptions(1)}
	for _, n := range []int{1, 0, 2, 3} {
		name := fmt.Sprintf("workers=%d", n)
		if n == 0 {
			name = "sharded-1"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				var (
					errs []error
					find = func() error { return nil }
				)
				m2, _ := Inputs{Files: []string{path}}.open()
				if n == 1 {
					p := newSingle(st)
					errs, _ = eachPacket(m2, nil, Inputs{}, p.add)
					find = func() error { return compareManifest(p.finish(), m) }
				} else {
					sp := newSharded(st, max(n, 1))
					errs, _ = sp.read(m2, nil, Inputs{})
					find = func() error { return compareManifest(sp.finish(), m) }
				}
				m2.Close()
				if len(errs) > 0 {
					b.Fatal(errs[0])
				}
				if err := find(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
