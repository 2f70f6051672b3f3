package pipeline

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// Inputs are the capture files of an analysis, read as one timeline merged
// by timestamp: captures taken at the same time on several hosts
// interleave, and a capture rotated into several files (tcpdump -C) reads
// as if its files were read one after the other, connections running on
// across them.
type Inputs struct {
	// Files are paths; "-" is Stdin.
	Files []string
	// Skew[i], if any, is added to every timestamp of Files[i].
	Skew  []time.Duration
	Stdin io.Reader
	// Stop, when closed, ends the reading: of files (and of standard
	// input redirected from one), at the next packet (within
	// progressEvery+1 packets); of standard input from a pipe, once the
	// bytes taken from it before are read (no read starts after Stop, and
	// one that waits for bytes ends at once), beside files too. What was read
	// before is decided and reported as usual (SIGINT on a `tcpdump |
	// kdupcap analyze -`: every packet taken from the pipe before the
	// signal).
	Stop <-chan struct{}
	// MaxBytes, when positive, ends the reading once this many bytes of
	// capture (decompressed: a small .zst may expand without end) were
	// read, as Stop does, within progressEvery+1 packets; what was read is
	// decided and reported, the summary saying where it stopped
	// (Analysis.Limited).
	MaxBytes int64
}

// Read is how far the reading of Inputs got: the bytes of the files as
// given (compressed, for progress against Inputs.Size) and of capture
// (decompressed).
type Read struct{ Input, Capture int64 }

// readEnd is why eachPacket ended.
type readEnd uint8

const (
	readEOF     readEnd = iota // every input to its end (or its error)
	readStopped                // Inputs.Stop closed
	readLimit                  // Inputs.MaxBytes reached
)

// Size is the total size of the files, or -1 when one is standard input
// from a pipe or cannot be stat'ed (a progress bar then shows bytes and
// rate only); standard input redirected from a file counts what is left
// of it.
func (in Inputs) Size() int64 {
	var total int64
	for _, f := range in.Files {
		if f == "-" {
			n := in.stdinFile()
			if n < 0 {
				return -1
			}
			total += n
			continue
		}
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			return -1
		}
		total += st.Size()
	}
	return total
}

// progressEvery+1 is how many packets are read between two calls of an
// onRead function (a power of two less one, used as a mask): cheap enough
// to cost nothing per packet, often enough for a bar redrawn ten times a
// second (256 packets are 16 MiB at most).
const progressEvery = 255

// open opens the files and merges them (a second read, for evidence); it
// returns the errors of the files that could not be opened, each naming
// its file.
func (in Inputs) open() (*capture.Merged, []error) {
	srcs, skew, errs := in.sources()
	return capture.Merge(srcs, capture.MergeOptions{ClockSkew: skew}), errs
}

// sources opens the inputs, in order, each with its skew; an input that
// fails to open is left out, its error returned.
func (in Inputs) sources() (srcs []*capture.Source, skew []time.Duration, errs []error) {
	for i, name := range in.Files {
		var (
			src *capture.Source
			err error
		)
		if name == "-" {
			src, err = in.openStdin()
		} else {
			src, err = capture.Open(name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		srcs = append(srcs, src)
		if i < len(in.Skew) {
			skew = append(skew, in.Skew[i])
		}
	}
	return srcs, skew, errs
}

// splitPays reports whether splitting a run (single.go's split) gains on
// srcs: the run reads at least min bytes: files of min bytes in all (as
// opened, compressed or not), or an input of unknown size (standard input,
// a pipe), unless maxBytes (Inputs.MaxBytes) is set below min.
func splitPays(srcs []*capture.Source, maxBytes, min int64) bool {
	if maxBytes > 0 && maxBytes < min {
		return false
	}
	total := int64(0)
	for _, s := range srcs {
		n := s.Size()
		if n < 0 {
			return true // of unknown size: counted as large
		}
		total += n
	}
	return total >= min
}

// eachPacket hands fn every packet of m in merged order, telling onRead
// (if any) how far it read every progressEvery+1 packets and at the end,
// and returns the input errors met: a file that fails is dropped and the
// others go on. It ends early once in.Stop (if not nil) is closed or
// in.MaxBytes of capture were read, and says why it ended.
func eachPacket(m *capture.Merged, onRead func(Read), in Inputs, fn func(capture.Packet)) (errs []error, end readEnd) {
	progress := func() {
		if onRead != nil {
			onRead(Read{Input: m.InputBytes(), Capture: m.CaptureBytes()})
		}
	}
	// At Stop the files end, and the merge with them, standard input
	// redirected from a file too (its size known); standard input from a
	// pipe ends itself (stopReader, openStdin) once the bytes taken from it
	// are read: ending the run at Stop would drop those bytes, gone from
	// the pipe, read ahead and not yet parsed, or all of them when the stop
	// comes before the first packet.
	stop, stopped := in.Stop, false
	for n := 0; ; n++ {
		if n&progressEvery == 0 {
			progress()
			select {
			case <-stop:
				m.EndSources(func(s *capture.Source) bool { return s.Name() != "-" || s.Size() >= 0 })
				stop, stopped = nil, true
			default:
			}
			if in.MaxBytes > 0 && m.CaptureBytes() >= in.MaxBytes {
				return errs, readLimit
			}
		}
		pkt, err := m.Next()
		if errors.Is(err, errStopped) {
			return errs, readStopped
		}
		if err == io.EOF {
			progress()
			if stopped {
				return errs, readStopped
			}
			return errs, readEOF
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fn(pkt)
	}
}

// openStdin opens standard input: as a file when it is one (`analyze - <
// capture.pcap`): read in whole chunks, its size known, and ended at a
// stop as the files are (stdinFile); else, when the run can be stopped,
// through a stopReader, its pipe grown (capture.GrowPipe). Through the
// stopReader, a real 1 GiB capture redirected from its file took 0.52 s
// to analyze, against 0.27 s as a file (5 interleaved rounds).
func (in Inputs) openStdin() (*capture.Source, error) {
	f, isFile := in.Stdin.(*os.File)
	if isFile && (in.Stop == nil || in.stdinFile() >= 0) {
		return capture.NewFileSource("-", f)
	}
	if isFile {
		capture.GrowPipe(f)
	}
	var stdin io.Reader = in.Stdin
	if in.Stop != nil {
		stdin = &stopReader{r: in.Stdin, stop: in.Stop}
	}
	return capture.NewSource("-", stdin)
}

// stdinFile returns capture.SizeLeft of standard input when it is a
// file; -1 for any other reader.
func (in Inputs) stdinFile() int64 {
	if f, ok := in.Stdin.(*os.File); ok {
		return capture.SizeLeft(f)
	}
	return -1
}

// stopReadBytes is the most a stopReader reads at once: a chunk read ahead
// (capture.AheadChunkBytes). Reads of 64 KiB, each a goroutine's, took
// `cat 1GiB.pcap | kdupcap analyze -` 0.89 s, 0.59 s with 512 KiB and the
// pipe grown to 1 MiB (capture.GrowPipe; either alone 0.71 and 0.88 s).
const stopReadBytes = capture.AheadChunkBytes

// errStopped is what a stopReader answers once Inputs.Stop is closed.
var errStopped = errors.New("pipeline: reading stopped")

// stopReader reads standard input on a goroutine of its own, so that a
// closed stop ends a Read that waits for bytes: a pipe from a capture that
// sends nothing must not keep an interrupted analysis from reporting. The
// bytes taken from the input before the stop are returned all the same,
// and no read starts after it.
type stopReader struct {
	r     io.Reader
	stop  <-chan struct{}
	res   chan readResult
	buf   []byte
	left  []byte // read and not yet returned
	err   error  // the read's error, for after left
	going bool   // a read is under way
}

type readResult struct {
	n   int
	err error
}

func (s *stopReader) Read(p []byte) (int, error) {
	if len(s.left) > 0 {
		n := copy(p, s.left)
		s.left = s.left[n:]
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	if !s.going {
		select {
		case <-s.stop:
			return 0, errStopped
		default:
		}
		if s.res == nil {
			s.res, s.buf = make(chan readResult, 1), make([]byte, stopReadBytes)
		}
		s.going = true
		go func() {
			n, err := s.r.Read(s.buf)
			s.res <- readResult{n, err}
		}()
	}
	var r readResult
	select {
	case r = <-s.res:
	case <-s.stop:
		// A select takes either when both are ready: bytes the read
		// already took come first.
		select {
		case r = <-s.res:
		default:
			return 0, errStopped
		}
	}
	s.going = false
	n := copy(p, s.buf[:r.n])
	s.left, s.err = s.buf[n:r.n], r.err
	if len(s.left) > 0 {
		return n, nil
	}
	return n, r.err
}
