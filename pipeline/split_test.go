package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/gencap"
)

// TestSplitSameAsOneGoroutine: the split run (decode and detect on a
// goroutine of their own, single.go) gives what the run on one goroutine
// gives, findings and every count, on the testdata captures sniffed (their
// brokers on ports that are not Kafka's: every connection drains until its
// bytes decide), merged, and on generated captures of both MTUs, with and
// without records and record prints; and so it does once the reader keeps
// the Decoder after a drain (maxDrains 1).
func TestSplitSameAsOneGoroutine(t *testing.T) {
	var inputs [][]string
	for _, pattern := range []string{"../testdata/*.pcap", "../testdata/*.pcapng"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			inputs = append(inputs, []string{f})
		}
	}
	if len(inputs) < 5 {
		t.Fatalf("%d captures under testdata", len(inputs))
	}
	inputs = append(inputs, []string{inputs[0][0], inputs[1][0], inputs[2][0]})
	dir := t.TempDir()
	for _, mtu := range []int{65535, 1500} {
		path := filepath.Join(dir, fmt.Sprintf("gen-%d.pcap", mtu))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg := gencap.DefaultConfig()
		cfg.TargetBytes, cfg.MTU = 4<<20, mtu
		if _, err := gencap.Generate(f, cfg); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, []string{path})
	}
	inputs = append(inputs, []string{holes(t, inputs[len(inputs)-1][0], 97)})
	for _, files := range inputs {
		for _, o := range []Options{{Sniff: true}, {Sniff: true, RecordMatch: true, Records: 3},
			{Ports: []uint16{9092}, RecordMatch: true}, {Ports: []uint16{9092}, MaxConnections: 3, IdleTimeout: time.Millisecond}} {
			want, _, _ := runSplit(t, files, o, 0)
			for _, drains := range []int{maxDrains, 1} {
				got, drained, handed := runSplit(t, files, o, drains)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v %+v, split (at most %d drains): differs from one goroutine:\n got %+v\nwant %+v", files, o, drains, got, want)
				}
				// The run stayed split (it goes on one goroutine only
				// after maxDrains drains): else the comparison above would
				// hold of the one-goroutine run alone.
				if drains == maxDrains && (drained >= maxDrains || handed == 0) {
					t.Errorf("%v %+v: %d drains, %d batches handed on: the split ran on one goroutine", files, o, drained, handed)
				}
			}
		}
	}
}

// splitRun is what a run found and counted.
type splitRun struct {
	Findings, Capture, Decode, Conns, Detect any
	Errors                                   []string
}

// runSplit runs files with o on one goroutine (drains 0) or split, the
// reader keeping the Decoder after that many drains; it returns what the
// run found and, split, how many drains it made and batches it handed to
// the decoding goroutine.
func runSplit(t *testing.T, files []string, o Options, drains int) (splitRun, int, int) {
	t.Helper()
	st := stages{det: o.detectOptions(), dec: o.decodeOptions(1), asm: o.assemblerOptions(1)}
	p := newSingle(st)
	if drains > 0 {
		p.startSplit()
		p.split.maxDrains = drains
	}
	srcs, skew, errs := Inputs{Files: files}.sources()
	m := capture.Merge(srcs, capture.MergeOptions{ClockSkew: skew, ReadAheadPlain: drains > 0})
	defer m.Close()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	eachPacket(m, func(Read) { p.stats() }, Inputs{}, p.add)
	findings := p.finish()
	drained, handed := 0, 0
	if p.split != nil {
		drained, handed = p.split.drains, p.split.handed
	}
	return splitRun{Findings: findings, Capture: p.asm.Stats(), Decode: p.dec.Stats(), Conns: p.dec.Connections(), Detect: p.det.Stats(), Errors: p.dec.Errors()}, drained, handed
}

// holes writes the capture at path with every nth packet left out, beside
// it: connections with gaps.
func holes(t *testing.T, path string, n int) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.TrimSuffix(path, ".pcap") + "-holes.pcap"
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%n != 0 {
			if err := w.WritePacket(ci, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// TestSplitDrainCounts: a drain counts against maxDrains only when it had
// something to wait for, a batch handed on since the last: a sniffed
// connection's segments that come with nothing decoded between them do
// not take the run onto one goroutine.
func TestSplitDrainCounts(t *testing.T) {
	o := Options{Sniff: true}
	p := newSingle(stages{det: o.detectOptions(), dec: o.decodeOptions(1), asm: o.assemblerOptions(1)})
	p.startSplit()
	sp := p.split
	sp.maxDrains = 2
	steps := []struct {
		event      bool // an event added before the drain
		wantDrains int
	}{
		{false, 0}, {false, 0}, {true, 1}, {false, 1}, {true, 2},
	}
	for i, s := range steps {
		if s.event {
			sp.add(splitEvent{kind: splitEndOfInput})
		}
		sp.drain()
		if sp.drains != s.wantDrains {
			t.Fatalf("drain %d: %d counted, want %d", i, sp.drains, s.wantDrains)
		}
	}
	if !sp.inline {
		t.Error("not inline after maxDrains drains")
	}
	p.finish()
}

// TestDefaultSplits: with the default workers and two CPUs, a run splits
// (decode and detect on a second goroutine) when the input files, pcap or
// pcapng, whose packets it hands on in place, hold at least splitMin
// bytes, or standard input is one; on less, the reader keeps the Decoder
// from the start, nothing handed on. The findings are those of one
// goroutine either way.
func TestDefaultSplits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	pcap, ng := "../testdata/kgo-v13-nonidempotent-timeout.pcap", "../testdata/kgo-tls13-nonidempotent-timeout.pcapng"
	pcapBytes, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(pcapBytes))
	for _, tc := range []struct {
		files    []string
		splitMin int64
		maxBytes int64
		split    bool
	}{
		{[]string{pcap}, 0, 0, true},
		{[]string{ng}, 0, 0, true},
		{[]string{ng}, 1 << 40, 0, false},
		{[]string{ng, pcap}, 0, 0, true},
		{[]string{pcap}, size, 0, true},
		{[]string{pcap}, size + 1, 0, false},
		{[]string{pcap, pcap}, 2 * size, 0, true},
		{[]string{pcap, "../testdata/missing.pcap"}, size + 1, 0, false},
		{[]string{"-"}, 1 << 40, 0, true},
		{[]string{"-", pcap}, 1 << 40, 0, true},
		{[]string{"-"}, 1 << 40, 1<<40 - 1, false},
	} {
		in := Inputs{Files: tc.files, Stdin: bytes.NewReader(pcapBytes), MaxBytes: tc.maxBytes}
		one := NewAnalysis(Options{Sniff: true, Workers: 1})
		wantErrs := len(one.Read(in, nil))
		want := one.Finish()
		a := NewAnalysis(Options{Sniff: true})
		a.splitMin = tc.splitMin
		in.Stdin = bytes.NewReader(pcapBytes)
		if errs := a.Read(in, nil); len(errs) != wantErrs {
			t.Fatalf("%v: %v, one goroutine: %d errors", tc.files, errs, wantErrs)
		}
		sp := a.single.split
		if split := sp != nil && sp.handed > 0; split != tc.split {
			t.Errorf("%v, at least %d bytes, max %d: split: %v, want %v", tc.files, tc.splitMin, tc.maxBytes, split, tc.split)
		}
		got := a.Finish()
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: findings differ from one goroutine's (%d against %d)", tc.files, len(got), len(want))
		}
	}
}

// TestStdin: standard input redirected from a file is read as the file,
// its size known (Inputs.Size too), split from splitMin bytes on; from a
// pipe, the run stoppable (the stopReader's reads of a chunk), of unknown
// size, it is split by default, and read with one goroutine and sharded
// too. Either way the findings are those of the file it carries (read as
// a file, they are checked against the broker's log by cmd/kdupcap's
// TestRecordedCaptures).
func TestStdin(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	pcap := "../testdata/kgo-v13-nonidempotent-timeout.pcap"
	b, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(b))
	want := fileFindings(t, pcap)
	for _, tc := range []struct {
		name     string
		pipe     bool
		workers  int
		splitMin int64 // 0: the default's
		split    bool
	}{
		{"file of splitMin bytes", false, 0, size, true},
		{"file of fewer", false, 0, size + 1, false},
		{"pipe, one goroutine", true, 1, 0, false},
		{"pipe, default", true, 0, 0, true},
		{"pipe, sharded", true, 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin, wantSize := stdinFile(t, pcap), size
			if tc.pipe {
				stdin, wantSize = stdinPipe(t, b), -1
			}
			defer stdin.Close()
			in := Inputs{Files: []string{"-"}, Stdin: stdin, Stop: make(chan struct{})}
			if n := in.Size(); n != wantSize {
				t.Errorf("Inputs.Size %d, want %d", n, wantSize)
			}
			a := NewAnalysis(Options{Sniff: true, Workers: tc.workers})
			if tc.splitMin > 0 {
				a.splitMin = tc.splitMin
			}
			if errs := a.Read(in, nil); len(errs) > 0 {
				t.Fatal(errs)
			}
			if split := a.single != nil && a.single.split != nil && a.single.split.handed > 0; split != tc.split {
				t.Errorf("split %v, want %v", split, tc.split)
			}
			if got := a.Finish(); len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("findings differ from the file's (%d against %d)", len(got), len(want))
			}
		})
	}
}

// stdinFile is the file at path, opened as a shell redirects standard
// input from it.
func stdinFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// stdinPipe is the read end of a pipe that b is written to, then closed.
func stdinPipe(t *testing.T, b []byte) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(b)
		w.Close()
	}()
	return r
}

// fileFindings are the findings of the capture at path read as a file, on
// one goroutine.
func fileFindings(t *testing.T, path string) []detect.Finding {
	t.Helper()
	one := NewAnalysis(Options{Sniff: true, Workers: 1})
	if errs := one.Read(Inputs{Files: []string{path}}, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	return one.Finish()
}
