package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
)

// Packet is one captured frame as read from a Source.
type Packet struct {
	// Data is the frame from its link-layer header on, as captured (cut at
	// the snap length). It is owned by the Source and valid only until the
	// next call to Next: copy what must be kept. It is empty for a packet
	// over MaxPacketBytes, skipped unread; CI.Length is then the captured
	// length it had (oversized.go).
	Data []byte
	// CI is the capture metadata; CI.AncillaryData is always nil.
	CI gopacket.CaptureInfo
	// LinkType is the link type of the interface the frame was captured on
	// (per packet in a pcapng file with several interfaces).
	LinkType layers.LinkType

	// chunk is the chunk read ahead that Data lies in, if any (Hold).
	chunk *aheadBuf
}

// Magic numbers, as the first four bytes of the input read little-endian.
const (
	magicPcapMicroLE = 0xa1b2c3d4
	magicPcapMicroBE = 0xd4c3b2a1
	magicPcapNanoLE  = 0xa1b23c4d
	magicPcapNanoBE  = 0x4d3cb2a1
	magicPcapng      = 0x0a0d0d0a
	magicZstd        = 0xfd2fb528
	magicGzip        = 0x8b1f // first two bytes only
)

// readerSize is the buffer of the reader under pcapgo; at least 4096 so that
// pcapgo's own bufio.NewReader reuses it, which lets Source know how many
// bytes the capture parser consumed. A pcap's records are parsed in a
// buffer of their own (pcapBuf, pcap.go).
const readerSize = 1 << 16

// zstdMaxWindow bounds the memory a zstd frame header can make the decoder
// reserve (zstd --long uses 128 MiB windows).
const zstdMaxWindow = 1 << 27

// zstdBlocks is how many blocks of a zstd stream are decoded at once when
// the run has procs CPUs (GOMAXPROCS). One block is decoded synchronously
// on the goroutine that reads the capture ahead (pcapahead.go): one core
// decompresses into the chunks, the other parses, reassembles and decodes,
// which is the split the run wants. More than one starts the decoder's own
// pipeline (three goroutines: blocks and literals, sequences, execution),
// each block's bytes handed between them; on two cores those goroutines
// and the run's take turns on both, and every hand-over crosses cores. On
// a 1 GB capture of real clients (bench-real) on two cores, 10 interleaved
// rounds: 1 block 1.33-1.69 s (median 1.54 s, 1.9 s of CPU, 47 MiB), 2
// blocks 1.44-2.39 s, 4 blocks 1.09-2.15 s (median 1.9 s, 3.0 s of CPU,
// 53 MiB); one block the faster in 9 of 10 rounds, and in 6 of 6 more
// (1.69-1.74 s against 1.81-2.29 s). Four blocks won on another VM of two
// cores, when the chunks came (0663bb2: 1.4 s against 2.2 s), and in some
// quarter hours on this one (0.89 against 1.16 s), which the round trip
// between the two CPUs did not foretell; one block costs a third less CPU
// and 6 MiB less memory either way. With four CPUs or more the decoder's
// goroutines have cores beside the run's: 4 blocks.
func zstdBlocks(procs int) int {
	if procs >= zstdParallelProcs {
		return 4
	}
	return 1
}

// zstdParallelProcs is the fewest CPUs that decode zstd blocks in
// parallel (zstdBlocks).
const zstdParallelProcs = 4

// Source reads packets from one capture file: pcap (microsecond or
// nanosecond timestamps, either byte order) or pcapng (any number of
// interfaces and link types), optionally compressed with gzip or zstd. The
// format is recognised by its magic bytes, never by the file name.
//
// A Source is not safe for concurrent use.
type Source struct {
	name  string
	file  io.Closer // closed by Close when the Source opened it
	codec string    // "gzip" or "zstd" when compressed: the decompressor is cnt.r
	// unzipped releases the decompressor, at Close, unless a merge read
	// the capture ahead: its goroutine then took the decompressor over
	// (readAhead), to read it straight into the chunks, and releases it.
	unzipped func()
	in       *countingReader // the input as given, compressed or not
	cnt      *countingReader // the capture stream: decompressed, or in itself
	tap      *secretsTap     // the key logs of pcapng Decryption Secrets Blocks
	br       *bufio.Reader
	pcap     *pcapgo.Reader   // the file header of a pcap, whose records Source reads itself (pcap.go)
	ng       *pcapgo.NgReader // a pcapng's blocks but those parsed in place
	ngb      *ngBlocks        // and how they read (pcapng.go)
	link     layers.LinkType
	rec      pcapRecords // how a pcap's records read
	pb       pcapBuf     // and the buffer they are parsed in
	pkt      Packet      // the packet next read
	good     int64       // stream offset after the last whole packet
	err      error       // sticky: returned by every Next after the first error
	// lastTS is the timestamp of the last packet returned (for a packet
	// skipped over MaxPacketBytes with none of its own).
	lastTS time.Time
	// size is the size of the regular file the Source opened, -1 for any
	// other input; a regular file is read ahead in whole chunks
	// (pcapAhead.whole).
	size int64

	// ahead is pb.ahead, for the byte counts read from other goroutines.
	ahead atomic.Pointer[pcapAhead]
}

// Open opens the named capture file; "-" reads standard input
// (NewFileSource). Every error is an *InputError.
func Open(name string) (*Source, error) {
	if name == "-" {
		return NewFileSource("stdin", os.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &InputError{File: name, Err: err, header: true}
	}
	s, err := NewFileSource(name, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.file = f
	return s, nil
}

// NewFileSource is NewSource reading f from where it stands, f's kind
// taken into account: a regular file (standard input redirected from one,
// too) has a Size, SizeLeft, and is read ahead in whole chunks; a pipe is
// grown (GrowPipe). Close does not close f.
func NewFileSource(name string, f *os.File) (*Source, error) {
	size := SizeLeft(f)
	if size < 0 {
		GrowPipe(f) // a pipe's; nothing else has its size
	}
	s, err := NewSource(name, f)
	if err != nil {
		return nil, err
	}
	s.size = size
	return s, nil
}

// NewSource reads a capture from r; name is used in errors only. It reads
// the file header before returning. Every error is an *InputError. Close
// does not close r.
func NewSource(name string, r io.Reader) (*Source, error) {
	s := &Source{name: name, in: &countingReader{r: r}, size: -1}
	raw := bufio.NewReaderSize(s.in, readerSize)
	head, err := raw.Peek(4)
	if len(head) == 0 {
		if err == nil || err == io.EOF {
			err = ErrEmpty
		}
		return nil, &InputError{File: name, Err: err, header: true}
	}
	var dec io.Reader = raw
	switch {
	case len(head) >= 2 && binary.LittleEndian.Uint16(head) == magicGzip:
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return nil, s.fail(0, codecError("gzip", err))
		}
		s.unzipped = func() { zr.Close() }
		s.codec, dec = "gzip", zr
	case len(head) == 4 && binary.LittleEndian.Uint32(head) == magicZstd:
		zr, err := newZstd(raw, zstdBlocks(runtime.GOMAXPROCS(0)))
		if err != nil {
			return nil, s.fail(0, codecError("zstd", err))
		}
		s.unzipped = zr.Close
		s.codec, dec = "zstd", zr
	}
	if s.codec == "" && len(head) == 4 && (isPcapMagic(binary.LittleEndian.Uint32(head)) || binary.LittleEndian.Uint32(head) == magicPcapng) {
		// A capture not compressed is read straight from the input, with
		// no second buffer: open moves raw's bytes to the Source's pcapBuf.
		// No tap either: a pcap has no secrets, and Source bounds its
		// records itself; a pcapng's tap is made by openNg.
		s.cnt, s.tap, s.br = s.in, &secretsTap{state: tapOff}, raw
	} else {
		s.cnt = &countingReader{r: dec, codec: s.codec}
		s.tap = &secretsTap{r: s.cnt}
		s.br = bufio.NewReaderSize(s.tap, readerSize)
	}
	if err := s.open(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// open recognises the (decompressed) stream and reads its file header.
func (s *Source) open() error {
	magic, err := s.br.Peek(4)
	switch {
	case len(magic) == 0 && (err == nil || err == io.EOF):
		return &InputError{File: s.name, Err: ErrEmpty, header: true, codec: s.codec}
	case len(magic) < 4 && err != nil && err != io.EOF:
		return s.fail(0, err)
	case len(magic) < 4:
		return &InputError{File: s.name, Err: fmt.Errorf("%w (only %d bytes)", ErrNotCapture, len(magic)), header: true, codec: s.codec}
	}
	switch binary.LittleEndian.Uint32(magic) {
	case magicPcapMicroLE, magicPcapMicroBE, magicPcapNanoLE, magicPcapNanoBE:
		m := binary.LittleEndian.Uint32(magic)
		r, err := pcapgo.NewReader(s.br)
		if err != nil {
			return s.fail(0, err)
		}
		s.pcap, s.link = r, r.LinkType()
		s.rec = newPcapRecords(m, r.Snaplen())
		// br's bytes move to the pcapBuf, which reads on from what br
		// read: the stream (the tap turned off at a pcap's first bytes).
		s.pb = newPcapBuf(s.br, s.cnt, s.cnt.n.Load())
		s.br = nil
	case magicPcapng:
		if err := s.openNg(); err != nil {
			return err
		}
	default:
		return &InputError{File: s.name, Err: fmt.Errorf("%w (starts with 0x%08x)", ErrNotCapture, binary.BigEndian.Uint32(magic)), header: true, codec: s.codec}
	}
	s.good = s.consumed()
	return nil
}

// Next returns the next packet, or io.EOF at the clean end of the input.
// Any other error is an *InputError; after an error every call returns the
// same error. The packet's Data is valid only until the next call. A packet
// over MaxPacketBytes is skipped unread and returned with no Data (see
// Packet.Data); one cut short by the end of the input is an InputError.
func (s *Source) Next() (Packet, error) {
	if err := s.next(); err != nil {
		return Packet{}, err
	}
	return s.pkt, nil
}

// next is Next, the packet read into s.pkt (a Merged takes it from there).
func (s *Source) next() error {
	if s.err != nil {
		return s.err
	}
	if s.pcap != nil {
		return s.nextPcap()
	}
	return s.nextNg()
}

// Secrets returns the TLS key logs (NSS key log text) of the pcapng
// Decryption Secrets Blocks read so far, in file order; SecretsDropped
// counts the blocks dropped beyond MaxSecretsBytes. The slices are the
// Source's: read only.
func (s *Source) Secrets() [][]byte { return s.tap.kept }

// SecretsDropped counts the Decryption Secrets Blocks dropped by
// MaxSecretsBytes.
func (s *Source) SecretsDropped() int { return s.tap.drops }

// SecretsDropped sums the sources' Source.SecretsDropped.
func (m *Merged) SecretsDropped() int {
	n := 0
	for _, s := range m.srcs {
		n += s.SecretsDropped()
	}
	return n
}

// newSecrets returns the key logs found since its last call.
func (s *Source) newSecrets() [][]byte {
	if s.tap.pulled == len(s.tap.kept) {
		return nil
	}
	k := s.tap.kept[s.tap.pulled:]
	s.tap.pulled = len(s.tap.kept)
	return k
}

// Close releases the decompressor and closes the file if Open opened it.
func (s *Source) Close() error {
	if s.pb.ahead != nil {
		s.pb.ahead.Close() // releases the decompressor, when it read it
	}
	if s.unzipped != nil {
		s.unzipped() // unless read ahead
		s.unzipped = nil
	}
	if s.file != nil {
		f := s.file
		s.file = nil
		if err := f.Close(); err != nil {
			return &InputError{File: s.name, Err: err, header: true}
		}
	}
	return nil
}

// InputBytes is how many bytes of the input as given (the file, still
// compressed if it is) the Source has read so far, for progress against the
// file's size. It runs up to two read buffers (64 KiB and the Source's
// 128 KiB, or its chunk of 512 KiB once read ahead) ahead of the packets
// returned, and a compressed file read ahead the compressed bytes of 3
// MiB more; it is not an offset for errors: InputError.Offset is.
func (s *Source) InputBytes() int64 {
	if a := s.ahead.Load(); a != nil && s.codec == "" {
		return a.handed.Load()
	}
	return s.in.n.Load()
}

// CaptureBytes is how many bytes of the capture stream, decompressed, the
// Source has read so far (InputBytes for a file not compressed): what a
// bound on the capture read counts, since a small compressed file may
// expand without end; once a pcap is read ahead, the bytes handed to its
// parser. Safe to call from another goroutine.
func (s *Source) CaptureBytes() int64 {
	if a := s.ahead.Load(); a != nil {
		return a.handed.Load()
	}
	return s.cnt.n.Load()
}

// Size is SizeLeft of the file the Source was made from, as it was then,
// compressed or not; -1 when it is not a regular file (a pipe, a Source
// made with NewSource).
func (s *Source) Size() int64 { return s.size }

// SizeLeft is how many bytes of f are left to read, from where it stands,
// when it is a regular file; -1 for any other (a pipe, a terminal).
func SizeLeft(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off > st.Size() {
		return -1
	}
	return st.Size() - off
}

// Name is the name the Source was made with, "-" for standard input read
// by a pipeline.
func (s *Source) Name() string { return s.name }

// readAhead starts reading (and decompressing) ahead of the packets read,
// on another goroutine, into chunks from pool (given back there at the
// end) where the packets are parsed in place (pcapahead.go), and reports
// whether the Source does so, until it ends or closes: a compressed
// capture, the decompressor itself reading into the chunks, and with plain
// one not compressed.
func (s *Source) readAhead(pool *bufPool, plain bool) bool {
	b := &s.pb
	if b.ahead != nil {
		return !b.ahead.ended && !b.ahead.closed
	}
	if !plain && s.codec == "" || b.err != nil || b.buf == nil || s.err != nil {
		return false
	}
	var release func()
	var check *frameCheck
	n, lead := aheadChunks, aheadLead
	if s.codec != "" {
		release, s.unzipped = s.unzipped, nil
		if z, ok := s.cnt.r.(*zstdStream); ok {
			check = z.deferChecks()
		}
		n, lead = aheadChunksCompressed, 0
	}
	b.ahead = startAhead(b.rd, release, pool, b.off, n, lead, s.size >= 0, check)
	s.ahead.Store(b.ahead)
	return true
}

func (s *Source) fail(off int64, err error) *InputError {
	return &InputError{File: s.name, Offset: off, Err: err, codec: s.codec}
}

// consumed is how many bytes of the (decompressed) capture stream the
// capture parser has taken.
func (s *Source) consumed() int64 {
	n := s.pb.off - int64(s.pb.buffered())
	if s.ngb != nil {
		n -= int64(s.br.Buffered()) // taken by pcapgo's reader, not yet read
	}
	return n
}

// countingReader counts the bytes read through it and names the codec in
// the errors of a decompressor. The count may be read from another
// goroutine than the one reading (the compressed input is read ahead).
type countingReader struct {
	r     io.Reader
	n     atomic.Int64
	codec string
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	if err != nil && err != io.EOF && c.codec != "" {
		err = codecError(c.codec, err)
	}
	return n, err
}

// codecError prefixes a decompressor's error with the codec's name, unless
// the error already starts with it.
func codecError(codec string, err error) error {
	if strings.HasPrefix(err.Error(), codec+":") {
		return err
	}
	return fmt.Errorf("%s: %w", codec, err)
}
