package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// pcapFile writes a pcap file by hand, in any byte order and resolution.
func pcapFile(order binary.AppendByteOrder, nano bool, link layers.LinkType, pkts []Packet) []byte {
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	b := order.AppendUint32(nil, magic)
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 4)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 65535)
	b = order.AppendUint32(b, uint32(link))
	for _, p := range pkts {
		frac := p.CI.Timestamp.Nanosecond()
		if !nano {
			frac /= 1000
		}
		b = order.AppendUint32(b, uint32(p.CI.Timestamp.Unix()))
		b = order.AppendUint32(b, uint32(frac))
		b = order.AppendUint32(b, uint32(len(p.Data)))
		b = order.AppendUint32(b, uint32(p.CI.Length))
		b = append(b, p.Data...)
	}
	return b
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// zst is b as one zstd frame, its size in the header, with a checksum.
func zst(tb testing.TB, b []byte) []byte { return zstdFrame(tb, b, true, true) }

// testPackets are three packets of a conversation, raw IPv4.
func testPackets(tb testing.TB) []Packet {
	pkts := packets(tb, rawFrame, client4, server4, []seg{
		{fromA: true, seq: 1001, flags: "PA", data: "first"},
		{fromA: false, seq: 5001, flags: "PA", data: "second"},
		{fromA: true, seq: 1006, flags: "PA", data: "third!"},
	})
	for i := range pkts {
		pkts[i].CI.Timestamp = pkts[i].CI.Timestamp.Add(time.Duration(i*1001) + 123456789)
	}
	return pkts
}

// pcapngFile writes two interfaces, raw IP and Ethernet, and alternates the
// packets between them.
func pcapngFile(tb testing.TB, pkts []Packet) ([]byte, []Packet) {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{LinkType: layers.LinkTypeRaw, TimestampResolution: 9}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		tb.Fatal(err)
	}
	eth, err := w.AddInterface(pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, TimestampResolution: 9})
	if err != nil {
		tb.Fatal(err)
	}
	var want []Packet
	for i, p := range pkts {
		if i%2 == 1 {
			p.Data = ethernet()(p.Data, false)
			p.LinkType = layers.LinkTypeEthernet
			p.CI.InterfaceIndex = eth
		}
		p.CI.CaptureLength, p.CI.Length = len(p.Data), len(p.Data)
		if err := w.WritePacket(p.CI, p.Data); err != nil {
			tb.Fatal(err)
		}
		want = append(want, p)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), want
}

// readAll reads a source to its end, copying the packets.
func readAll(s *Source) ([]Packet, error) {
	var out []Packet
	for {
		p, err := s.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		p.Data = append([]byte(nil), p.Data...)
		out = append(out, p)
	}
}

func samePackets(t *testing.T, got, want []Packet, nanos bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d packets, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		wts := w.CI.Timestamp
		if !nanos {
			wts = wts.Truncate(time.Microsecond)
		}
		if !bytes.Equal(g.Data, w.Data) || g.LinkType != w.LinkType || !g.CI.Timestamp.Equal(wts) || g.CI.Length != len(w.Data) || g.CI.CaptureLength != len(w.Data) {
			t.Errorf("packet %d:\n got %v %v %x\nwant %v %v %x", i, g.LinkType, g.CI, g.Data, w.LinkType, w.CI, w.Data)
		}
	}
}

func TestSourceFormats(t *testing.T) {
	pkts := testPackets(t)
	ng, ngWant := pcapngFile(t, pkts)
	var lib bytes.Buffer
	lw := pcapgo.NewWriterNanos(&lib)
	lw.WriteFileHeader(65535, layers.LinkTypeRaw)
	for _, p := range pkts {
		lw.WritePacket(p.CI, p.Data)
	}
	tests := []struct {
		name  string
		file  []byte
		want  []Packet
		nanos bool
	}{
		{"pcap micro little-endian", pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts), pkts, false},
		{"pcap micro big-endian", pcapFile(binary.BigEndian, false, layers.LinkTypeRaw, pkts), pkts, false},
		{"pcap nano little-endian", pcapFile(binary.LittleEndian, true, layers.LinkTypeRaw, pkts), pkts, true},
		{"pcap nano big-endian", pcapFile(binary.BigEndian, true, layers.LinkTypeRaw, pkts), pkts, true},
		{"pcap written by pcapgo", lib.Bytes(), pkts, true},
		{"pcapng two link types", ng, ngWant, true},
		{"gzip pcap", gz(pcapFile(binary.BigEndian, true, layers.LinkTypeRaw, pkts)), pkts, true},
		{"zstd pcap", zst(t, pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts)), pkts, false},
		{"gzip pcapng", gz(ng), ngWant, true},
		{"zstd pcapng", zst(t, ng), ngWant, true},
		{"pcap no packets", pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, nil), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Through a file and Open, and through NewSource.
			path := filepath.Join(t.TempDir(), "capture")
			if err := os.WriteFile(path, tt.file, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			samePackets(t, got, tt.want, tt.nanos)

			s, err = NewSource("mem", bytes.NewReader(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err = readAll(s)
			if err != nil {
				t.Fatal(err)
			}
			samePackets(t, got, tt.want, tt.nanos)
			// io.EOF is sticky.
			if _, err := s.Next(); err != io.EOF {
				t.Errorf("after the end: %v", err)
			}
		})
	}
}

func TestSourceErrors(t *testing.T) {
	pkts := testPackets(t)
	file := pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts)
	// The end of the second packet: where the truncated file's last good
	// packet ends.
	second := int64(24 + 16 + len(pkts[0].Data) + 16 + len(pkts[1].Data))
	ng, ngPkts := pcapngFile(t, pkts)
	badVersion := append([]byte{}, file[:24]...)
	badVersion[4] = 9
	tests := []struct {
		name       string
		file       []byte
		packets    int // read before the error
		wantErr    string
		wantOffset int64
		is         error
	}{
		{"empty", nil, 0, "f: empty file", 0, ErrEmpty},
		{"html", []byte("<html><body>hi</body></html>"), 0, "f: not a capture file (starts with 0x3c68746d)", 0, ErrNotCapture},
		{"two bytes", []byte("ab"), 0, "f: not a capture file (only 2 bytes)", 0, ErrNotCapture},
		{"empty gzip", gz(nil), 0, "f: empty file", 0, ErrEmpty},
		{"gzip of text", gz([]byte("hello, world")), 0, "f: not a capture file (starts with 0x68656c6c)", 0, ErrNotCapture},
		{"truncated header", file[:10], 0, "f: truncated at byte 0: unexpected EOF", 0, io.ErrUnexpectedEOF},
		{"truncated in packet data", file[:second+20], 2, fmt.Sprintf("f: truncated at byte %d: unexpected EOF", second), second, io.ErrUnexpectedEOF},
		{"truncated in record header", file[:second+5], 2, fmt.Sprintf("f: truncated at byte %d: unexpected EOF", second), second, io.ErrUnexpectedEOF},
		{"truncated gzip", gz(file)[:len(gz(file))-30], -1, "f: truncated at decompressed byte", -1, io.ErrUnexpectedEOF},
		{"truncated zstd", zst(t, file)[:len(zst(t, file))-10], -1, "f: truncated at decompressed byte", -1, io.ErrUnexpectedEOF},
		{"truncated pcapng", ng[:len(ng)-7], 2, "f: truncated at byte", -1, io.ErrUnexpectedEOF},
		{"bad gzip header", []byte{0x1f, 0x8b, 0, 0, 0}, 0, "f: truncated at byte 0: gzip: unexpected EOF", 0, io.ErrUnexpectedEOF},
		{"pcap bad version", badVersion, 0, "f: bad capture data after byte 0: Unknown major version 9", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Packet
			s, err := NewSource("f", bytes.NewReader(tt.file))
			if err == nil {
				got, err = readAll(s)
				s.Close()
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an *InputError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want prefix %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if tt.wantOffset >= 0 && ie.Offset != tt.wantOffset {
				t.Errorf("offset %d, want %d", ie.Offset, tt.wantOffset)
			}
			if ie.File != "f" {
				t.Errorf("file %q", ie.File)
			}
			if tt.packets >= 0 {
				if len(got) != tt.packets {
					t.Errorf("read %d packets before the error, want %d", len(got), tt.packets)
				}
				want := pkts
				if strings.Contains(tt.name, "pcapng") {
					want = ngPkts
				}
				samePackets(t, got, want[:len(got)], strings.Contains(tt.name, "pcapng"))
			}
			if s != nil {
				if _, again := s.Next(); again != err {
					t.Errorf("error not sticky: %v then %v", err, again)
				}
			}
		})
	}
}

func TestOpenMissingFile(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.pcap"))
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, os.ErrNotExist) || !strings.HasSuffix(err.Error(), "nope.pcap: no such file or directory") {
		t.Fatalf("error %v", err)
	}
}

func TestOpenStdin(t *testing.T) {
	pkts := testPackets(t)
	path := filepath.Join(t.TempDir(), "stdin.pcap.gz")
	if err := os.WriteFile(path, gz(pcapFile(binary.LittleEndian, true, layers.LinkTypeRaw, pkts)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	s, err := Open("-")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	samePackets(t, got, pkts, true)
}

// TestSeedCaptures reads the seed captures of the repository and checks that
// the bytes reassembled per direction are the TCP payloads in the file, as
// an independent decode with gopacket.NewPacket finds them.
func TestSeedCaptures(t *testing.T) {
	paths, err := filepath.Glob("../testdata/seed-*.pcap")
	if err != nil {
		t.Fatal(err)
	}
	wantPackets := map[string]int{"seed-idempotent-retry.pcap": 5, "seed-nonidempotent-retry.pcap": 3}
	if len(paths) != len(wantPackets) {
		t.Fatalf("found %v, want the %d seed captures", paths, len(wantPackets))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			pkts, err := readAll(s)
			if err != nil {
				t.Fatal(err)
			}
			if n := wantPackets[filepath.Base(path)]; len(pkts) != n {
				t.Errorf("%d packets, want %d", len(pkts), n)
			}
			want := map[bool]string{}
			var first string
			for _, p := range pkts {
				if p.LinkType != layers.LinkTypeRaw {
					t.Errorf("link type %v", p.LinkType)
				}
				gp := gopacket.NewPacket(p.Data, layers.LayerTypeIPv4, gopacket.Default)
				tcp, _ := gp.Layer(layers.LayerTypeTCP).(*layers.TCP)
				if tcp == nil {
					t.Fatalf("no TCP in %x", p.Data)
				}
				src := gp.NetworkLayer().NetworkFlow().Src().String() + ":" + tcp.SrcPort.String()
				if first == "" {
					first = src
				}
				want[src == first] += string(tcp.Payload)
			}
			r := &recorder{}
			a := NewAssembler(r.newStream, AssemblerOptions{})
			for _, p := range pkts {
				a.Add(p)
			}
			a.Close()
			if len(r.streams) != 1 {
				t.Fatalf("%d streams", len(r.streams))
			}
			got := map[bool]string{}
			for _, ev := range r.streams[0].events {
				switch {
				case strings.HasPrefix(ev, "A "):
					got[true] += ev[2:]
				case strings.HasPrefix(ev, "B "):
					got[false] += ev[2:]
				case ev != "close":
					t.Errorf("event %q", ev)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("delivered %v\nwant %v", got, want)
			}
			if r.streams[0].a.String() != first {
				t.Errorf("a = %v, want %v", r.streams[0].a, first)
			}
			if st := a.Stats(); st.Gaps != 0 || st.Retransmissions != 0 || st.Undecodable != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestSourceCodecErrors(t *testing.T) {
	file := gz(pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, testPackets(t)))
	bad := append([]byte{}, file...)
	bad[len(bad)-5] ^= 0xff // the length in the trailer
	z := zst(t, pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, testPackets(t)))
	zbad := append([]byte{}, z...)
	zbad[len(zbad)/2] ^= 0xff
	for _, tt := range []struct {
		name string
		file []byte
		want string
	}{
		{"gzip trailer", bad, "f: bad capture data after decompressed byte"},
		{"gzip header", []byte{0x1f, 0x8b, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, "f: bad capture data after byte 0: gzip: invalid header"},
		{"zstd corrupt", zbad, "f: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSource("f", bytes.NewReader(tt.file))
			if err == nil {
				_, err = readAll(s)
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want prefix %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "gzip") && !strings.Contains(err.Error(), "zstd") {
				t.Errorf("error %q does not name the codec", err)
			}
			t.Log(err)
		})
	}
}

// TestZstdDecoders reads zstd captures with both of the decoder's ways
// (zstdBlocks): one block on the reading goroutine, and its own pipeline
// of goroutines, as with two CPUs and with four.
func TestZstdDecoders(t *testing.T) {
	for _, tc := range []struct{ procs, want int }{
		{1, 1}, {2, 1}, {3, 1}, {4, 4}, {64, 4},
	} {
		if got := zstdBlocks(tc.procs); got != tc.want {
			t.Errorf("zstdBlocks(%d) = %d, want %d", tc.procs, got, tc.want)
		}
	}
	pkts := testPackets(t)
	ng, ngWant := pcapngFile(t, pkts)
	pcap := zst(t, pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, zstdParallelProcs} {
		runtime.GOMAXPROCS(procs)
		for _, f := range []struct {
			name  string
			file  []byte
			want  []Packet
			nanos bool
		}{{"pcap", pcap, pkts, false}, {"pcapng", zst(t, ng), ngWant, true}} {
			t.Run(fmt.Sprintf("%s/%d CPUs", f.name, procs), func(t *testing.T) {
				samePackets(t, readBack(t, "mem", f.file), f.want, f.nanos)
			})
		}
	}
}

// TestNewFileSourceOffset: a regular file read from where it stands (a
// shell's `- < file` after another reader took some) has the size of what
// is left, and its packets are read from there.
func TestNewFileSourceOffset(t *testing.T) {
	pkts := testPackets(t)
	file := pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts)
	path := filepath.Join(t.TempDir(), "f.pcap")
	if err := os.WriteFile(path, append([]byte("taken by another reader"), file...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(len("taken by another reader")), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	s, err := NewFileSource("-", f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != int64(len(file)) {
		t.Errorf("Size %d, want %d", s.Size(), len(file))
	}
	got, err := readAll(s)
	if err != nil {
		t.Fatal(err)
	}
	samePackets(t, got, pkts, false)
	s.Close()
	if _, err := f.Stat(); err != nil {
		t.Errorf("Close closed the file given: %v", err)
	}
}
