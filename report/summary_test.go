package report

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestSummaryFetchCounts: the fetch counts show in every summary format
// when the capture had fetches, and not at all when it had none.
func TestSummaryFetchCounts(t *testing.T) {
	writers := []struct {
		name string
		new  func(io.Writer) Writer
		want string
	}{
		{"table", NewTable, "│ fetch responses   │ 3 (7 record batches in them: evidence of what the log holds)"},
		{"lines", NewLines, "│ fetch responses   │ 3 (7 record batches in them: evidence of what the log holds)"},
		{"json", NewJSON, `"fetch_responses":3,"fetched_batches":7,`},
	}
	for _, w := range writers {
		for _, fetched := range []bool{true, false} {
			s := summary()
			if fetched {
				s.FetchResponses, s.FetchedBatches = 3, 7
			}
			var b bytes.Buffer
			if err := w.new(&b).Summary(s); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			out := b.String()
			if fetched && !strings.Contains(out, w.want) {
				t.Errorf("%s with fetches: no %q in\n%s", w.name, w.want, out)
			}
			if !fetched && strings.Contains(out, "fetch") {
				t.Errorf("%s without fetches mentions them:\n%s", w.name, out)
			}
		}
	}
}
