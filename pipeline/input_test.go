package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/gencap"
)

// countReader counts its Reads; each returns the next of reads (then
// blocks until release is closed, as an open pipe that sends nothing
// does).
type countReader struct {
	reads   [][]byte
	calls   atomic.Int32
	release chan struct{}
}

func (c *countReader) Read(p []byte) (int, error) {
	i := int(c.calls.Add(1)) - 1
	if i < len(c.reads) {
		return copy(p, c.reads[i]), nil
	}
	<-c.release
	return 0, io.EOF
}

// TestStopReader: a stopReader returns the bytes taken from its input
// before the stop, even when the stop and the read's end are both there
// when it looks (a select takes either), starts no read after the stop,
// and ends a read that waits for bytes at once.
func TestStopReader(t *testing.T) {
	data := bytes.Repeat([]byte("kafka"), 100)
	tests := []struct {
		name string
		// setup returns the stopReader and its input, the stop closed
		// at the point the case is about.
		setup func(t *testing.T) (*stopReader, *countReader)
		p     int    // the size of the caller's buffer
		want  []byte // read before errStopped
		calls int32  // the input's Reads
	}{
		{
			name: "read done and stop closed at once",
			setup: func(t *testing.T) (*stopReader, *countReader) {
				// The state a Read meets when the input's read ended
				// and the stop came before it looked: both ready.
				cr := &countReader{release: make(chan struct{})}
				stop := make(chan struct{})
				close(stop)
				s := &stopReader{r: cr, stop: stop, res: make(chan readResult, 1), buf: make([]byte, 64<<10), going: true}
				s.res <- readResult{n: copy(s.buf, data)}
				return s, cr
			},
			p: 64 << 10, want: data, calls: 0,
		},
		{
			name: "bytes left over from a short buffer",
			setup: func(t *testing.T) (*stopReader, *countReader) {
				cr := &countReader{reads: [][]byte{data}, release: make(chan struct{})}
				stop := make(chan struct{})
				s := &stopReader{r: cr, stop: stop}
				p := make([]byte, 100)
				if n, err := s.Read(p); n != 100 || err != nil {
					t.Fatalf("first read: %d, %v", n, err)
				}
				close(stop)
				return s, cr
			},
			p: 100, want: data[100:], calls: 1,
		},
		{
			name: "no read after the stop",
			setup: func(t *testing.T) (*stopReader, *countReader) {
				cr := &countReader{reads: [][]byte{data}, release: make(chan struct{})}
				stop := make(chan struct{})
				close(stop)
				return &stopReader{r: cr, stop: stop}, cr
			},
			p: 64 << 10, want: nil, calls: 0,
		},
		{
			name: "a read that waits ends at the stop",
			setup: func(t *testing.T) (*stopReader, *countReader) {
				cr := &countReader{release: make(chan struct{})}
				stop := make(chan struct{})
				time.AfterFunc(20*time.Millisecond, func() { close(stop) })
				return &stopReader{r: cr, stop: stop}, cr
			},
			p: 64 << 10, want: nil, calls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A select's choice is random: enough rounds that taking the
			// stop over ready bytes half the time fails.
			for round := range 64 {
				s, cr := tc.setup(t)
				var got []byte
				p := make([]byte, tc.p)
				var err error
				deadline := time.Now().Add(10 * time.Second)
				for err == nil {
					if time.Now().After(deadline) {
						t.Fatal("Read did not end")
					}
					var n int
					n, err = s.Read(p)
					got = append(got, p[:n]...)
				}
				close(cr.release) // the goroutine of a waiting read ends
				if !errors.Is(err, errStopped) {
					t.Fatalf("round %d: %v, want errStopped", round, err)
				}
				if !bytes.Equal(got, tc.want) {
					t.Fatalf("round %d: read %d bytes before the stop, want %d", round, len(got), len(tc.want))
				}
				if n := cr.calls.Load(); n != tc.calls {
					t.Fatalf("round %d: %d reads of the input, want %d", round, n, tc.calls)
				}
			}
		})
	}
}

// stopAfter is standard input that sends a capture and then, when asked
// for more, closes stop (the signal) and sends nothing, its pipe still
// open, until release.
type stopAfter struct {
	r       io.Reader
	stop    chan struct{}
	once    sync.Once
	release chan struct{}
}

func (s *stopAfter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 || err != io.EOF {
		return n, err
	}
	s.once.Do(func() { close(s.stop) })
	<-s.release
	return 0, io.EOF
}

// stopCapture generates a capture of 4 MB of 1500-byte packets, chunks
// read ahead, its manifest the truth.
func stopCapture(t *testing.T) (string, *gencap.Manifest) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gen.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gencap.DefaultConfig()
	cfg.TargetBytes, cfg.MTU = 4<<20, 1500
	m, err := gencap.Generate(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if len(m.Resends) == 0 {
		t.Fatal("harness: the generated capture holds no re-send")
	}
	return path, m
}

// TestStopStdin: a stop that comes once standard input has sent a whole
// capture (SIGINT on `tcpdump | kdupcap analyze -` after the traffic) ends
// the run with every packet of it decided and every duplicate its log
// holds found, whatever is read ahead and not parsed when the stop comes,
// and with whichever run (one goroutine, split, sharded).
func TestStopStdin(t *testing.T) {
	// The seed capture's log (testdata/README.md): two batches held twice.
	seed := "../testdata/kcat-nonidempotent-timeout.pcap"
	seedLog := map[uint32][]int64{0xaf65e89b: {2, 4}, 0xc6aab9a9: {5, 7}}
	checkSeed := func(got []detect.Finding) error {
		if len(got) != len(seedLog) {
			return fmt.Errorf("%d findings, the log holds %d batches twice", len(got), len(seedLog))
		}
		for _, f := range got {
			if w, ok := seedLog[f.BatchCRC]; !ok || f.Verdict != detect.Duplicated || !slices.Equal(f.AppendedOffsets, w) {
				return fmt.Errorf("batch %#x %s at %v: not one the log holds twice", f.BatchCRC, f.Verdict, f.AppendedOffsets)
			}
		}
		return nil
	}
	// A generated capture of 4 MB: chunks read ahead, its manifest the
	// truth.
	gen, m := stopCapture(t)
	checks := map[string]func([]detect.Finding) error{
		seed: checkSeed,
		gen:  func(got []detect.Finding) error { return compareManifest(got, m) },
	}
	seedPackets := int64(len(pcapPackets(t, seed)))
	// The generated capture on standard input also runs beside the seed
	// as a file: at the stop the file ends, and standard input goes on
	// to the end of what it sent. The seed's packets all come after the
	// generated ones (2026-11-29, the generator's 2026-01-01), so a stop
	// check may let some or all of them through first, never part of the
	// generated ones; the seed's findings, if any, must be the log's.
	besideSeed := func(got []detect.Finding) error {
		var gens, seeds []detect.Finding
		for _, f := range got {
			if _, ok := seedLog[f.BatchCRC]; ok {
				seeds = append(seeds, f)
			} else {
				gens = append(gens, f)
			}
		}
		for _, f := range seeds {
			if f.Verdict != detect.Duplicated || !slices.Equal(f.AppendedOffsets, seedLog[f.BatchCRC]) {
				return fmt.Errorf("seed batch %#x %s at %v: not as the log holds it", f.BatchCRC, f.Verdict, f.AppendedOffsets)
			}
		}
		return compareManifest(gens, m)
	}
	for _, run := range []struct {
		stdin  string
		beside []string
	}{{seed, nil}, {gen, nil}, {gen, []string{seed}}} {
		capBytes, err := os.ReadFile(run.stdin)
		if err != nil {
			t.Fatal(err)
		}
		wantPackets := m.Totals.Packets
		if run.stdin == seed {
			wantPackets = seedPackets
		}
		check, most := checks[run.stdin], wantPackets
		if run.beside != nil {
			check, most = besideSeed, wantPackets+seedPackets
		}
		name := filepath.Base(run.stdin)
		if run.beside != nil {
			name += " beside a file"
		}
		for _, workers := range []int{1, 0, 2} {
			for round := range 5 {
				in := &stopAfter{r: bytes.NewReader(capBytes), stop: make(chan struct{}), release: make(chan struct{})}
				a := NewAnalysis(Options{Sniff: true, Workers: workers})
				errs := a.Read(Inputs{Files: append([]string{"-"}, run.beside...), Stdin: in, Stop: in.stop}, nil)
				close(in.release)
				got := a.Finish()
				if !a.Stopped() {
					t.Errorf("%s workers %d round %d: not stopped (errors %v)", name, workers, round, errs)
				}
				if p := a.Summary(nil).Packets; p < wantPackets || p > most {
					t.Errorf("%s workers %d round %d: %d packets decided, standard input sent %d (and the file %d)", name, workers, round, p, wantPackets, most-wantPackets)
				}
				if err := check(got); err != nil {
					t.Errorf("%s workers %d round %d: %v", name, workers, round, err)
				}
			}
		}
	}
}

// TestStopFiles: a stop ends the files at once (here at the stop check
// progressEvery+1 packets in), and beside them standard input reads on
// to the end of what it had sent: here the seed capture, taken whole from
// the pipe when the run opened it, its packets stamped after the
// generated file's, so that every one of them comes after the stop.
func TestStopFiles(t *testing.T) {
	gen, m := stopCapture(t)
	seed := "../testdata/kcat-nonidempotent-timeout.pcap"
	seedBytes, err := os.ReadFile(seed)
	if err != nil {
		t.Fatal(err)
	}
	seedPackets := int64(len(pcapPackets(t, seed)))
	const wantSeed = 2 // the seed's log (testdata/README.md): two batches held twice
	for _, tc := range []struct {
		name        string
		files       []string
		stdinFile   bool // standard input redirected from the seed's file
		wantPackets int64
		wantFinds   int
	}{
		{"files", []string{gen}, false, progressEvery + 1, 0},
		{"files and standard input", []string{gen, "-"}, false, progressEvery + 1 + seedPackets, wantSeed},
		// Redirected from a file, standard input ends with the files.
		{"files and standard input from a file", []string{gen, "-"}, true, progressEvery + 1, 0},
	} {
		for _, workers := range []int{1, 0, 2} {
			t.Run(fmt.Sprintf("%s/workers %d", tc.name, workers), func(t *testing.T) {
				stop := make(chan struct{})
				calls := 0
				onRead := func(Read) {
					// Told before the first packet and at every check:
					// the stop comes at the first check after one.
					if calls++; calls == 2 {
						close(stop)
					}
				}
				a := NewAnalysis(Options{Sniff: true, Workers: workers})
				a.splitMin = 0 // split however small the files
				in := Inputs{Files: tc.files, Stdin: bytes.NewReader(seedBytes), Stop: stop}
				if tc.stdinFile {
					f, err := os.Open(seed)
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					in.Stdin = f
				}
				if errs := a.Read(in, onRead); len(errs) > 0 {
					t.Fatal(errs)
				}
				got := a.Finish()
				if !a.Stopped() {
					t.Error("not stopped")
				}
				if p := a.Summary(nil).Packets; p != tc.wantPackets || p >= m.Totals.Packets {
					t.Errorf("%d packets decided, want %d (the file has %d)", p, tc.wantPackets, m.Totals.Packets)
				}
				seeds := 0
				for _, f := range got {
					if f.BatchCRC == 0xaf65e89b || f.BatchCRC == 0xc6aab9a9 {
						seeds++
					}
				}
				if seeds != tc.wantFinds {
					t.Errorf("%d of the seed's findings, want %d", seeds, tc.wantFinds)
				}
			})
		}
	}
}
