package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// ngWriter writes pcapng blocks by hand, well formed or not, in one byte
// order.
type ngWriter struct {
	order ngOrder
	b     []byte
}

type ngOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// block appends a block of type typ: body, padded to 4 bytes, between its
// lengths; length, when not 0, is written instead of the true one.
func (w *ngWriter) block(typ uint32, body []byte, length uint32) *ngWriter {
	body = append(body, make([]byte, (4-len(body)&3)&3)...)
	if length == 0 {
		length = uint32(12 + len(body))
	}
	w.b = w.order.AppendUint32(w.b, typ)
	w.b = w.order.AppendUint32(w.b, length)
	w.b = append(w.b, body...)
	w.b = w.order.AppendUint32(w.b, length)
	return w
}

// opt is an option: code, length, value padded to 4 bytes.
func (w *ngWriter) opt(code uint16, val []byte) []byte {
	b := w.order.AppendUint16(nil, code)
	b = w.order.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	return append(b, make([]byte, (4-len(val)&3)&3)...)
}

func (w *ngWriter) shb(opts ...[]byte) *ngWriter {
	body := w.order.AppendUint32(nil, byteOrderMagic)
	body = w.order.AppendUint16(body, 1)
	body = w.order.AppendUint16(body, 0)
	body = w.order.AppendUint64(body, ^uint64(0))
	for _, o := range opts {
		body = append(body, o...)
	}
	return w.block(blockSHB, body, 0)
}

// dsb appends a Decryption Secrets Block of a TLS key log.
func (w *ngWriter) dsb(keylog string) *ngWriter {
	body := w.order.AppendUint32(nil, secretsTLSKeyLg)
	body = w.order.AppendUint32(body, uint32(len(keylog)))
	return w.block(blockDSB, append(body, keylog...), 0)
}

func (w *ngWriter) idb(link layers.LinkType, snap uint32, opts ...[]byte) *ngWriter {
	body := w.order.AppendUint16(nil, uint16(link))
	body = w.order.AppendUint16(body, 0)
	body = w.order.AppendUint32(body, snap)
	for _, o := range opts {
		body = append(body, o...)
	}
	return w.block(1, body, 0)
}

func (w *ngWriter) epb(iface uint32, ts uint64, data []byte, orig uint32, opts ...[]byte) *ngWriter {
	body := w.order.AppendUint32(nil, iface)
	body = w.order.AppendUint32(body, uint32(ts>>32))
	body = w.order.AppendUint32(body, uint32(ts))
	body = w.order.AppendUint32(body, uint32(len(data)))
	body = w.order.AppendUint32(body, orig)
	body = append(body, data...)
	body = append(body, make([]byte, (4-len(data)&3)&3)...)
	for _, o := range opts {
		body = append(body, o...)
	}
	return w.block(blockEPB, body, 0)
}

// payload is n bytes of a packet, told apart by seed.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// pcapgoPackets reads file with pcapgo alone, as Source read every pcapng
// before its Enhanced Packet Blocks were parsed in place.
func pcapgoPackets(file []byte) ([]Packet, error) {
	r, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		return nil, err
	}
	var pkts []Packet
	for {
		data, ci, err := r.ZeroCopyReadPacketData()
		if err != nil {
			return pkts, err
		}
		iface, err := r.Interface(ci.InterfaceIndex)
		if err != nil {
			return pkts, err
		}
		ci.AncillaryData = nil
		pkts = append(pkts, Packet{Data: bytes.Clone(data), CI: ci, LinkType: iface.LinkType})
	}
}

// samePcapgo fails t unless got are the packets pcapgo read, want: data,
// link type and capture info all equal.
func samePcapgo(t *testing.T, got, want []Packet) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d packets, pcapgo read %d", len(got), len(want))
	}
	for i, w := range want {
		if g := got[i]; !samePacket(g, w) {
			t.Fatalf("packet %d:\n got %v %+v %x\nwant %v %+v %x", i, g.LinkType, g.CI, g.Data, w.LinkType, w.CI, w.Data)
		}
	}
}

// samePacket reports whether g is w: data, link type and capture info.
func samePacket(g, w Packet) bool {
	return bytes.Equal(g.Data, w.Data) && g.LinkType == w.LinkType && g.CI.Timestamp.Equal(w.CI.Timestamp) &&
		g.CI.Timestamp.Location() == w.CI.Timestamp.Location() && g.CI.CaptureLength == w.CI.CaptureLength &&
		g.CI.Length == w.CI.Length && g.CI.InterfaceIndex == w.CI.InterfaceIndex
}

// ngCases are pcapngs of every block kind and the malformed blocks Source
// treats apart; overrun: where pcapgo read past a block, Source stops with
// errBlockOverrun after the packets before it.
func ngCases() []struct {
	name    string
	file    []byte
	overrun bool
} {
	var le, be ngOrder = binary.LittleEndian, binary.BigEndian
	w := func(o ngOrder) *ngWriter { return &ngWriter{order: o} }
	tsresol := func(w *ngWriter, r byte) []byte { return w.opt(9, []byte{r}) }
	tsoffset := func(w *ngWriter, secs uint64) []byte { return w.opt(14, w.order.AppendUint64(nil, secs)) }
	eoo := func(w *ngWriter) []byte { return w.opt(0, nil) }

	basic := w(le).shb().idb(layers.LinkTypeEthernet, 0)
	for i := range 40 {
		basic.epb(0, 1_700_000_000_000_000+uint64(i)*1237, payload(i*37%200+1, byte(i)), uint32(i*37%200+1))
	}

	many := w(le)
	many.shb(many.opt(1, []byte("a comment")), many.opt(4, []byte("kdupcap test")), eoo(many))
	many.idb(layers.LinkTypeEthernet, 65535, many.opt(2, []byte("eth0")), tsresol(many, 9), eoo(many))
	many.idb(layers.LinkTypeRaw, 0, tsresol(many, 0x80|20), tsoffset(many, 1000))
	many.idb(layers.LinkTypeLinuxSLL, 0, tsresol(many, 3))
	many.idb(layers.LinkTypeNull, 0, tsresol(many, 19))
	many.epb(0, 1_700_000_000_123_456_789, payload(60, 1), 60, many.opt(2, le.AppendUint32(nil, 1)), many.opt(1, []byte("epb comment!")), eoo(many))
	many.epb(1, 3<<20|12345, payload(61, 2), 1500)
	many.epb(2, 1_700_000_000_123, payload(62, 3), 62, many.opt(0x8000, []byte{1, 2, 3}))
	many.epb(3, 17_000_000_001_234_567_890, payload(63, 4), 63)
	many.dsb("CLIENT_RANDOM 01 02\n")
	many.block(4, many.opt(0, nil), 0)                                                  // NRB, empty
	many.block(5, append(le.AppendUint64(le.AppendUint32(nil, 0), 5), eoo(many)...), 0) // ISB
	many.block(0x00000BAD, []byte("custom"), 0)
	many.block(3, append(le.AppendUint32(nil, 64), payload(64, 5)...), 0) // SPB
	pb := le.AppendUint16(nil, 1)
	pb = le.AppendUint16(pb, 0)
	pb = le.AppendUint32(pb, 0)
	pb = le.AppendUint32(pb, 99)
	pb = le.AppendUint32(pb, 65)
	pb = le.AppendUint32(pb, 65)
	many.block(2, append(pb, payload(65, 6)...), 0) // obsolete Packet Block
	many.epb(0, 1, nil, 0)
	many.epb(1, 2, payload(pcapBufSize, 7), pcapBufSize) // larger than the buffer: pcapgo's
	many.epb(0, 3, payload(3, 8), 3, many.opt(0, nil), many.opt(7, []byte("after the end: skipped")))

	bigEndian := w(be).shb().idb(layers.LinkTypeEthernet, 0, tsresol(&ngWriter{order: be}, 6))
	bigEndian.epb(0, 1_700_000_000_000_001, payload(90, 9), 90)
	twoSections := append([]byte(nil), basic.b...)
	second := w(be).shb().idb(layers.LinkTypeRaw, 0).idb(layers.LinkTypeIPv4, 0)
	second.epb(1, 42, payload(20, 10), 20)
	twoSections = append(twoSections, second.b...)
	twoSections = append(twoSections, w(le).shb().idb(layers.LinkTypeIPv6, 0).epb(0, 43, payload(40, 11), 40).b...)

	unknownIface := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10).epb(4, 2, payload(10, 2), 10)
	eooLength := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	eooLength.epb(0, 2, payload(10, 2), 10, eooLength.opt(0, []byte{1, 2, 3, 4}))
	optionOverrun := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	optionOverrun.epb(0, 2, payload(10, 2), 10, append(le.AppendUint16(le.AppendUint16(nil, 1), 200), "short"...))
	optionOverrun.epb(0, 3, payload(10, 3), 10)
	capOverrun := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	capOverrun.b = append(capOverrun.b, w(le).epb(0, 2, payload(10, 2), 10).b...)
	le.PutUint32(capOverrun.b[len(capOverrun.b)-44+20:], 100) // its capture length past the block
	capOverrun.epb(0, 3, payload(10, 3), 10)
	noTrailer := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	noTrailer.block(blockEPB, append(le.AppendUint32(le.AppendUint32(le.AppendUint64(le.AppendUint32(nil, 0), 5), 12), 12), payload(12, 4)...), 8+20+12)
	oddLength := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	oddLength.block(0x00000BAD, []byte("abcdef"), 18)
	oddLength.epb(0, 3, payload(10, 3), 10)
	idbOverrun := w(le).shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	idbOverrun.block(0x00000BAD, []byte("custom"), 0) // the error is at the packet's end, not the block's start
	idbOverrun.block(1, []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 40, 0}, 0)
	idbOverrun.epb(0, 3, payload(10, 3), 10)
	truncated := append([]byte(nil), basic.b[:len(basic.b)-9]...)
	badOrder := append([]byte(nil), basic.b...)
	badOrder = append(badOrder, w(le).shb().b...)
	badOrder[len(basic.b)+8] = 0x99

	return []struct {
		name    string
		file    []byte
		overrun bool
	}{
		{"basic", basic.b, false},
		{"every block kind", many.b, false},
		{"big-endian", bigEndian.b, false},
		{"three sections", twoSections, false},
		{"unknown interface", unknownIface.b, false},
		{"end of options with a length", eooLength.b, false},
		{"option past the block", optionOverrun.b, true},
		{"capture length past the block", capOverrun.b, true},
		{"no trailing length", noTrailer.b, true},
		{"length not a multiple of 4", oddLength.b, false},
		{"interface options past the block", idbOverrun.b, true},
		{"truncated", truncated, false},
		{"second section of no byte order", badOrder, false},
	}
}

// TestPcapngInPlace: a pcapng's packets read in place are those pcapgo
// reads, with the same error after them, read from a reader and read
// ahead in chunks; where pcapgo read past a block, the packets before it
// and errBlockOverrun.
func TestPcapngInPlace(t *testing.T) {
	dir := t.TempDir()
	// A section of 2.5 MB before a case's own makes it read ahead in
	// chunks, the blocks cut at their ends at many places.
	lead := (&ngWriter{order: binary.LittleEndian}).shb().idb(layers.LinkTypeEthernet, 0)
	for i := 0; len(lead.b) < 5<<19; i++ {
		n := 1 + i*7919%1600
		if i%50 == 0 {
			n = 60000 + i
		}
		lead.epb(0, uint64(i)*1000, payload(n, byte(i)), uint32(n))
	}
	for _, tc := range ngCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, prefix := range [][]byte{nil, lead.b} {
				testPcapngInPlace(t, dir, append(bytes.Clone(prefix), tc.file...), tc.overrun, int64(len(prefix)))
			}
		})
	}
}

// testPcapngInPlace reads file as TestPcapngInPlace says; an overrun's
// error is at the end of the last packet before it, the case's third
// block, prefix bytes into the file.
func testPcapngInPlace(t *testing.T, dir string, file []byte, overrun bool, prefix int64) {
	t.Helper()
	want, wantErr := pcapgoPackets(file)
	path := filepath.Join(dir, "f.pcapng")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []bool{false, true} {
		got, held, err := readPcapng(t, path, ahead)
		if overrun {
			var ie *InputError
			if !errors.Is(err, errBlockOverrun) || !errors.As(err, &ie) {
				t.Fatalf("ahead %v: error %v, want %v", ahead, err, errBlockOverrun)
			}
			if ie.Offset != prefix+28+20+44 {
				t.Errorf("ahead %v: error at byte %d, want %d: %v", ahead, ie.Offset, prefix+28+20+44, err)
			}
			if len(got) > len(want) {
				t.Fatalf("ahead %v: %d packets, pcapgo %d", ahead, len(got), len(want))
			}
			want = want[:len(got)]
		} else {
			sameEnd(t, err, wantErr)
		}
		samePcapgo(t, got, want)
		if !ahead && held > 0 || ahead && len(file) > 1<<20 && held == 0 {
			t.Errorf("ahead %v, %d bytes: %d of %d packets held", ahead, len(file), held, len(got))
		}
	}
}

// readPcapng reads the pcapng at path to its end, ahead in chunks or not,
// and counts the packets that could be held.
func readPcapng(t *testing.T, path string, ahead bool) (pkts []Packet, held int, err error) {
	s, err := Open(path)
	if err != nil {
		return nil, 0, err
	}
	m := Merge([]*Source{s}, MergeOptions{ReadAheadPlain: ahead})
	defer m.Close()
	for {
		p, err := m.Next()
		if err != nil {
			return pkts, held, err
		}
		if h, ok := p.Hold(); ok {
			held++
			h.Release()
		}
		p.Data = bytes.Clone(p.Data)
		pkts = append(pkts, p)
	}
}

// sameEnd fails t unless err, Source's end, is pcapgo's: both io.EOF, or
// an InputError over pcapgo's error.
func sameEnd(t *testing.T, err, pcapgoErr error) {
	t.Helper()
	if pcapgoErr == io.EOF || err == io.EOF {
		if err != pcapgoErr {
			t.Fatalf("end %v, pcapgo's %v", err, pcapgoErr)
		}
		return
	}
	var ie *InputError
	if !errors.As(err, &ie) || ie.Err.Error() != pcapgoErr.Error() {
		t.Fatalf("error %v, pcapgo's %v", err, pcapgoErr)
	}
}

// FuzzPcapngInPlace: whatever the bytes, a pcapng read by Source gives
// pcapgo's packets and pcapgo's end, or, where pcapgo read past a block's
// length, the packets before that block and errBlockOverrun; read as it
// comes and a byte at a time.
func FuzzPcapngInPlace(f *testing.F) {
	for _, tc := range ngCases() {
		f.Add(tc.file)
	}
	ng, _ := pcapngFile(f, testPackets(f))
	f.Add(ng)
	f.Fuzz(func(t *testing.T, file []byte) {
		if len(file) < 4 || binary.LittleEndian.Uint32(file) != magicPcapng {
			return
		}
		want, wantErr := pcapgoPackets(file)
		for _, r := range []io.Reader{bytes.NewReader(file), iotest.OneByteReader(bytes.NewReader(file))} {
			got, err := readSource(r)
			// A packet block over MaxPacketBytes is skipped unread (pcapgo
			// reads it): only the packets before it compare.
			for i, p := range got {
				if i < len(want) && samePacket(p, want[i]) {
					continue
				}
				if p.Data == nil && p.CI.CaptureLength == 0 && p.CI.Length > MaxPacketBytes {
					got, err = got[:i], errBlockOverrun
				}
				break
			}
			if errors.Is(err, errBlockOverrun) || strings.Contains(err.Error(), "bound, skipped") {
				if len(got) > len(want) {
					t.Fatalf("%d packets before the overrun, pcapgo read %d", len(got), len(want))
				}
				samePcapgo(t, got, want[:len(got)])
				continue
			}
			samePcapgo(t, got, want)
			sameEnd(t, err, wantErr)
		}
	})
}

// readSource reads a capture from r to its end: the packets and the error
// that ended it (io.EOF at the clean end).
func readSource(r io.Reader) ([]Packet, error) {
	s, err := NewSource("fuzz", r)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	got, err := readAll(s)
	if err == nil {
		err = io.EOF
	}
	return got, err
}

// TestPcapngOversizedCut: a packet block over the bound cut short by the
// end of the input ends the Source with an error after the packets before
// it, and lets its buffer go.
func TestPcapngOversizedCut(t *testing.T) {
	w := &ngWriter{order: binary.LittleEndian}
	w.shb().idb(layers.LinkTypeEthernet, 0).epb(0, 1, payload(10, 1), 10)
	w.b = binary.LittleEndian.AppendUint32(w.b, blockEPB)
	w.b = binary.LittleEndian.AppendUint32(w.b, MaxPacketBytes+ngBlockSlack+64)
	w.b = append(w.b, make([]byte, 1000)...)
	s, err := NewSource("f", bytes.NewReader(w.b))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := readAll(s)
	if len(got) != 1 || err == nil || !strings.Contains(err.Error(), "bound, skipped) is cut short") {
		t.Fatalf("%d packets, %v", len(got), err)
	}
	if s.pb.buf != nil {
		t.Error("the buffer is still held after the error")
	}
}

// TestPcapngWiresharkTools: pcapngs as Wireshark's editcap and mergecap
// write them (section and interface options, packet comments, snap-length
// cuts, injected secrets, several interfaces of different link types, many
// sections end to end) read in place as pcapgo reads them, from a file and
// read ahead; read ahead, the packets of a large one held in place.
func TestPcapngWiresharkTools(t *testing.T) {
	editcap := testenv.Tool(t, "editcap")
	mergecap := testenv.Tool(t, "mergecap")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keys, []byte(testKeyLog), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v: %s", name, args, err, b)
		}
	}
	lo, sll2 := "testdata/lo-ethernet.pcap", "testdata/any-sll2.pcap"
	out := func(name string) string { return filepath.Join(dir, name) }
	run(editcap, "-F", "pcapng", lo, out("plain.pcapng"))
	run(editcap, "-F", "pcapng", "-a", "1:first packet", "-a", "3:a comment of some length, padded", lo, out("comments.pcapng"))
	run(editcap, "-F", "pcapng", "-s", "70", lo, out("snaplen.pcapng"))
	run(editcap, "--inject-secrets", "tls,"+keys, sll2, out("secrets.pcapng"))
	run(mergecap, "-F", "pcapng", "-w", out("merged.pcapng"), out("comments.pcapng"), sll2, "../testdata/kgo-v13-nonidempotent-timeout.pcap")
	// Many sections end to end, over 1 MiB: read ahead in chunks.
	var big []byte
	for b, _ := os.ReadFile(out("merged.pcapng")); len(big) < 3<<20; {
		big = append(big, b...)
	}
	if err := os.WriteFile(out("sections.pcapng"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plain", "comments", "snaplen", "secrets", "merged", "sections"} {
		t.Run(name, func(t *testing.T) {
			path := out(name + ".pcapng")
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := pcapgoPackets(file)
			if wantErr != io.EOF || len(want) == 0 {
				t.Fatalf("pcapgo: %d packets, %v", len(want), wantErr)
			}
			for _, ahead := range []bool{false, true} {
				got, held, err := readPcapng(t, path, ahead)
				sameEnd(t, err, wantErr)
				samePcapgo(t, got, want)
				if ahead && len(file) > 1<<20 && held < len(got)*9/10 {
					t.Errorf("read ahead: %d of %d packets held in place", held, len(got))
				}
			}
		})
	}
}
