package main

import (
	"fmt"
	"testing"
)

// BenchmarkAnalyzeWorkers is BenchmarkAnalyze with --workers 1 (the single
// pipeline) and sharded over 2 and 3 workers; sharded-1 is the sharded
// pipeline with one worker (the reader and merger on one goroutine, the
// worker on another), which --workers never picks.
func BenchmarkAnalyzeWorkers(b *testing.B) {
	path, m, size := benchInput(b)
	opts := pipelineOptions{ports: []uint16{9092}, sniff: true, window: defaultWindow, idleTimeout: defaultIdleTimeout, recordMatch: true}
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
				if n == 1 {
					p := newPipeline(opts)
					errs = p.readFiles([]string{path}, nil, nil)
					find = func() error { return compareManifest(p.finish(), m) }
				} else {
					sp := newShardedPipeline(opts, max(n, 1))
					errs = sp.readFiles([]string{path}, nil, nil)
					find = func() error { return compareManifest(sp.finish(), m) }
				}
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
