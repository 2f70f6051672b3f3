package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/detect"
)

// TestAttemptsOmittedJSON: the count of attempts not kept is written only
// when there are some, after "attempts".
func TestAttemptsOmittedJSON(t *testing.T) {
	for _, tc := range []struct {
		omitted int
		want    string
	}{
		{0, ""},
		{250, `"attempts":[],"attempts_omitted":250,`},
	} {
		var b bytes.Buffer
		if err := NewJSON(&b).Finding(detect.Finding{AttemptsOmitted: tc.omitted}); err != nil {
			t.Fatal(err)
		}
		line := b.String()
		if got := strings.Contains(line, "attempts_omitted"); got != (tc.want != "") {
			t.Errorf("omitted %d: %s", tc.omitted, line)
		}
		if tc.want != "" && !strings.Contains(line, tc.want) {
			t.Errorf("omitted %d: want %s in %s", tc.omitted, tc.want, line)
		}
	}
}
