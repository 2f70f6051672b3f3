package tlsdecrypt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	testRandom = "aa" + strings.Repeat("0", 60) + "01"
	testMaster = "5ec5e7" + strings.Repeat("0", 84) + "5ec5e7"
	test13     = "5ec5e7" + strings.Repeat("0", 57) + "1"
)

func TestKeyLogParse(t *testing.T) {
	text := strings.Join([]string{
		"# comment",
		"",
		"CLIENT_RANDOM " + testRandom + " " + testMaster,
		"CLIENT_HANDSHAKE_TRAFFIC_SECRET " + testRandom + " " + test13 + "\r",
		"  EXPORTER_SECRET " + testRandom + " " + test13,
		"CLIENT_EARLY_TRAFFIC_SECRET " + testRandom + " " + test13,
		"SERVER_TRAFFIC_SECRET_N " + testRandom + " " + test13,
		"CLIENT_RANDOM " + testRandom[:10] + " " + testMaster,               // 5: short random
		"CLIENT_RANDOM " + testRandom + " " + testMaster[:90],               // 6: short master
		"CLIENT_RANDOM " + testRandom + " " + testMaster + " extra",         // 7: fields
		"SERVER_TRAFFIC_SECRET_0 " + testRandom + " zz" + test13[2:],        // 8: not hex
		"NONSENSE_LABEL " + testRandom + " " + test13,                       // 9
		testMaster + " " + testRandom,                                       // 10: no label, hex only
		"CLIENT_TRAFFIC_SECRET_0 " + strings.Repeat("g", 64) + " " + test13, // 11
	}, "\n")
	k := NewKeyLog()
	n, err := k.Load(strings.NewReader(text), "keys.log")
	if err != nil || n != 2 {
		t.Fatalf("Load = %d, %v; want 2 secrets", n, err)
	}
	st := k.Stats()
	if st.Randoms != 1 || st.Malformed != 7 || st.Ignored != 3 || st.Lines != 12 {
		t.Errorf("stats %+v", st)
	}
	msgs := k.Malformed()
	wantLines := []string{"keys.log:8:", "keys.log:9:", "keys.log:10:", "keys.log:11:", "keys.log:12:", "keys.log:13:", "keys.log:14:"}
	if len(msgs) != len(wantLines) {
		t.Fatalf("messages %q", msgs)
	}
	for i, m := range msgs {
		if !strings.HasPrefix(m, wantLines[i]) {
			t.Errorf("message %q, want prefix %q", m, wantLines[i])
		}
		if strings.Contains(m, "5ec5e7") || strings.Contains(m, "5EC5E7") {
			t.Errorf("message %q shows a secret", m)
		}
	}
	if s := k.String(); strings.Contains(s, "5ec5e7") {
		t.Errorf("String shows a secret: %s", s)
	}
	var r [32]byte
	r[0], r[31] = 0xaa, 1
	lines := k.linesFor(r)
	if len(lines) != 2 || lines[0] != "CLIENT_RANDOM "+testRandom+" "+testMaster {
		t.Errorf("lines %q", lines)
	}
	if err := k.AddLine("CLIENT_RANDOM " + testRandom + " " + testMaster[:10]); err == nil || strings.Contains(err.Error(), testMaster[:10]) {
		t.Errorf("AddLine error %v", err)
	}
	if err := k.AddLine("# fine"); err != nil {
		t.Error(err)
	}
}

func TestKeyLogMalformedCap(t *testing.T) {
	k := NewKeyLog()
	k.Add([]byte(strings.Repeat("bad line\n", 100)), "x")
	if st := k.Stats(); st.Malformed != 100 || len(k.Malformed()) != maxMalformed {
		t.Errorf("%d malformed, %d messages", st.Malformed, len(k.Malformed()))
	}
}

// TestFollow: lines appended to a growing file are read, a partial last
// line once it is complete, and a truncated file from its start.
func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	k := NewKeyLog()
	f := k.Follow(path)
	if n, err := f.Poll(); n != 0 || err != nil {
		t.Fatalf("missing file: %d, %v", n, err)
	}
	line := "CLIENT_RANDOM " + testRandom + " " + testMaster + "\n"
	other := strings.Replace(line, "aa00", "bb00", 1)
	third := strings.Replace(line, "aa00", "cc00", 1)
	w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	gen := k.Gen()
	w.WriteString(line + other[:30])
	if n, _ := f.Poll(); n != 1 || k.Gen() == gen {
		t.Fatalf("first poll added %d", n)
	}
	w.WriteString(other[30:])
	if n, _ := f.Poll(); n != 1 || k.Stats().Randoms != 2 {
		t.Fatalf("second poll added %d, %+v", n, k.Stats())
	}
	if n, _ := f.Poll(); n != 0 {
		t.Fatalf("idle poll added %d", n)
	}
	os.WriteFile(path, []byte(third), 0o600)
	if n, _ := f.Poll(); n != 1 || k.Stats().Randoms != 3 || k.Stats().Malformed != 0 {
		t.Fatalf("after truncation: %d, %+v %q", n, k.Stats(), k.Malformed())
	}
}
