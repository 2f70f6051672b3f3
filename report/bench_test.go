package report

import (
	"io"
	"testing"
)

// BenchmarkFindings writes the four sample findings in each format: the
// cost of reporting, paid once per finding at the end of a run.
func BenchmarkFindings(b *testing.B) {
	fs := findings()
	for _, bc := range []struct {
		name string
		new  func(io.Writer) Writer
	}{
		{"table", NewTable},
		{"json", NewJSON},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := bc.new(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				for i := range fs {
					if err := w.Finding(fs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
