package readmecheck

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// fake answers every run with the same numbered lines.
func fake(n int) Runner {
	return func(_ context.Context, _ string, args []string) ([]byte, error) {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(args[0] + " " + strings.Repeat("x", i) + "\n")
		}
		return []byte(b.String()), nil
	}
}

func TestRender(t *testing.T) {
	out := []byte("1\n2\n3\n4\n5\n")
	tests := []struct {
		marker string
		want   []string
	}{
		{"analyze f", []string{"1", "2", "3", "4", "5"}},
		{"analyze f; lines 1-2", []string{"1", "2", "..."}},
		{"analyze f; lines 1-2,4-$", []string{"1", "2", "...", "4", "5"}},
		{"analyze f; lines 2", []string{"...", "2", "..."}},
		{"analyze f; lines 4-9", []string{"...", "4", "5"}},
	}
	for _, tt := range tests {
		m, err := parseMarker(tt.marker)
		if err != nil {
			t.Fatalf("%q: %v", tt.marker, err)
		}
		if got := Render(m, out); !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q, want %q", tt.marker, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, doc := range []string{
		"<!-- readme-check: analyze f -->\ntext\n",
		"<!-- readme-check: analyze f\n```\nx\n```\n",
		"<!-- readme-check: -->\n```\nx\n```\n",
		"<!-- readme-check: analyze f; lines 3-1 -->\n```\nx\n```\n",
		"<!-- readme-check: analyze f; color red -->\n```\nx\n```\n",
		"<!-- readme-check: analyze f -->\n```\nx\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("no error for %q", doc)
		}
	}
}

// TestCheckUpdate: a block that differs is reported, Update rewrites it,
// and then Check is clean; text outside the blocks is kept.
func TestCheckUpdate(t *testing.T) {
	doc := "# T\n\n<!-- readme-check: a; lines 1-2 -->\n\n```\na x\nold\n...\n```\nafter\n<!-- readme-check: b -->\n```json\nb x\nb xx\n```\n"
	diffs, err := Check(context.Background(), "README.md", []byte(doc), fake(3))
	if err != nil || len(diffs) != 2 || diffs[0].Line != 3 || diffs[1].Line != 11 {
		t.Fatalf("diffs %v, %v", diffs, err)
	}
	if !strings.Contains(diffs[0].String(), `block line 2 is "old", the output's "a xx"`) {
		t.Errorf("diff %s", diffs[0])
	}
	up, err := Update(context.Background(), "README.md", []byte(doc), fake(3))
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n\n<!-- readme-check: a; lines 1-2 -->\n\n```\na x\na xx\n...\n```\nafter\n<!-- readme-check: b -->\n```json\nb x\nb xx\nb xxx\n```\n"
	if string(up) != want {
		t.Fatalf("updated:\n%s\nwant:\n%s", up, want)
	}
	if diffs, err := Check(context.Background(), "README.md", up, fake(3)); err != nil || len(diffs) != 0 {
		t.Errorf("after update: %v, %v", diffs, err)
	}
}
