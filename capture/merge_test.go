package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// mpkt is a packet of a merge test: its label is its data, at is its
// timestamp after t0.
type mpkt struct {
	label string
	at    time.Duration
}

// mergeFile writes a nanosecond pcap of pkts with pcapgo; truncate > 0 then
// appends a packet cut after truncate bytes of its record.
func mergeFile(tb testing.TB, pkts []mpkt, truncate int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
		tb.Fatal(err)
	}
	for _, p := range pkts {
		if err := w.WritePacket(ci(t0.Add(p.at), len(p.label)), []byte(p.label)); err != nil {
			tb.Fatal(err)
		}
	}
	if truncate > 0 {
		n := buf.Len()
		if err := w.WritePacket(ci(t0, 100), make([]byte, 100)); err != nil {
			tb.Fatal(err)
		}
		buf.Truncate(n + truncate)
	}
	return buf.Bytes()
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// TestMerge merges small pcaps and lists what Next gives: label@ms for a
// packet (read before the next call, which checks ownership), err:FILE@OFFSET
// for an error.
// mergeTestFile is one input of a TestMerge case.
type mergeTestFile struct {
	pkts     []mpkt
	truncate int // cut a last packet after this many bytes
}

func TestMerge(t *testing.T) {
	type file = mergeTestFile
	tests := []struct {
		name   string
		files  []file
		skew   []time.Duration
		want   string
		layout Layout
	}{{
		name:  "one file",
		files: []file{{pkts: []mpkt{{"a1", ms(1)}, {"a2", ms(2)}, {"a3", ms(3)}}}},
		want:  "a1@1 a2@2 a3@3",
	}, {
		name: "two hosts interleaved",
		files: []file{
			{pkts: []mpkt{{"req1", ms(1)}, {"req2", ms(3)}}},
			{pkts: []mpkt{{"resp1", ms(2)}, {"resp2", ms(4)}}},
		},
		want:   "req1@1 resp1@2 req2@3 resp2@4",
		layout: Overlapping,
	}, {
		name: "five files",
		files: []file{
			{pkts: []mpkt{{"a", ms(5)}, {"a", ms(10)}}},
			{pkts: []mpkt{{"b", ms(1)}, {"b", ms(9)}}},
			{pkts: []mpkt{{"c", ms(3)}}},
			{pkts: []mpkt{{"d", ms(2)}, {"d", ms(4)}, {"d", ms(11)}}},
			{pkts: []mpkt{{"e", ms(0)}, {"e", ms(12)}}},
		},
		want:   "e@0 b@1 d@2 c@3 d@4 a@5 b@9 a@10 d@11 e@12",
		layout: Overlapping,
	}, {
		name: "equal timestamps keep file order",
		files: []file{
			{pkts: []mpkt{{"a1", ms(5)}, {"a2", ms(5)}, {"a3", ms(6)}}},
			{pkts: []mpkt{{"b1", ms(5)}, {"b2", ms(6)}}},
			{pkts: []mpkt{{"c1", ms(4)}, {"c2", ms(5)}}},
		},
		want:   "c1@4 a1@5 a2@5 b1@5 c2@5 a3@6 b2@6",
		layout: Overlapping,
	}, {
		name: "rotated set reads as sequential",
		files: []file{
			{pkts: []mpkt{{"a1", ms(1)}, {"a2", ms(2)}, {"a3", ms(3)}}},
			{pkts: []mpkt{{"b1", ms(3)}, {"b2", ms(4)}}},
			{pkts: []mpkt{{"c1", ms(5)}}},
		},
		want: "a1@1 a2@2 a3@3 b1@3 b2@4 c1@5",
	}, {
		name: "rotated set given out of order",
		files: []file{
			{pkts: []mpkt{{"c1", ms(5)}}},
			{pkts: []mpkt{{"a1", ms(1)}, {"a2", ms(2)}}},
			{pkts: []mpkt{{"b1", ms(3)}, {"b2", ms(4)}}},
		},
		want: "a1@1 a2@2 b1@3 b2@4 c1@5",
	}, {
		name: "a file's own order is kept when its time goes back",
		files: []file{
			{pkts: []mpkt{{"a1", ms(5)}, {"a2", ms(3)}}},
			{pkts: []mpkt{{"b1", ms(4)}}},
		},
		want:   "b1@4 a1@5 a2@3",
		layout: Overlapping,
	}, {
		name: "files without packets",
		files: []file{
			{},
			{pkts: []mpkt{{"b1", ms(1)}}},
			{},
		},
		want: "b1@1",
	}, {
		name:  "no source",
		files: nil,
		want:  "",
	}, {
		name: "truncated member: error at its place, others go on",
		files: []file{
			{pkts: []mpkt{{"a1", ms(1)}, {"a3", ms(3)}, {"a5", ms(5)}, {"a7", ms(7)}}},
			{pkts: []mpkt{{"b2", ms(2)}, {"b4", ms(4)}}, truncate: 30},
		},
		want:   "a1@1 b2@2 a3@3 b4@4 err:f1@60 a5@5 a7@7",
		layout: Overlapping,
	}, {
		name: "truncated first packet: error while priming",
		files: []file{
			{pkts: []mpkt{{"a1", ms(1)}, {"a2", ms(2)}}},
			{truncate: 10},
			{pkts: []mpkt{{"c1", ms(0)}}},
		},
		want: "err:f1@24 c1@0 a1@1 a2@2",
	}, {
		name: "skew moves a whole file",
		files: []file{
			{pkts: []mpkt{{"req1", ms(1000)}, {"req2", ms(1003)}}},
			// This host's clock is 5s early.
			{pkts: []mpkt{{"resp1", ms(-3998)}, {"resp2", ms(-3996)}}},
		},
		skew:   []time.Duration{0, 5 * time.Second},
		want:   "req1@1000 resp1@1002 req2@1003 resp2@1004",
		layout: Overlapping,
	}, {
		name: "negative skew, shorter skew list",
		files: []file{
			{pkts: []mpkt{{"a1", ms(10)}, {"a2", ms(12)}}},
			{pkts: []mpkt{{"b1", ms(0)}}},
		},
		skew:   []time.Duration{ms(-11)},
		want:   "a1@-1 b1@0 a2@1",
		layout: Overlapping,
	}, {
		name: "skew turns overlap into a sequence",
		files: []file{
			{pkts: []mpkt{{"a1", ms(1)}, {"a2", ms(2)}}},
			{pkts: []mpkt{{"b1", ms(1)}, {"b2", ms(2)}}},
		},
		skew: []time.Duration{0, ms(1.5)},
		want: "a1@1 a2@2 b1@2.5 b2@3.5",
	}}
	// Each case with its files as they are (read ahead or not), gzipped and
	// zstd-compressed: the same packets and errors, read (and
	// decompressed) ahead (at most maxReadAhead at once, none holding
	// buffers once read).
	for _, codec := range []string{"none", "none-ahead", "gzip", "zstd"} {
		for _, tt := range tests {
			t.Run(codec+"/"+tt.name, func(t *testing.T) {
				testMerge(t, codec, tt.files, tt.skew, tt.want, tt.layout)
			})
		}
	}
}

// testMerge is one case of TestMerge.
func testMerge(t *testing.T, codec string, files []mergeTestFile, skew []time.Duration, want string, layout Layout) {
	var srcs []*Source
	for i, f := range files {
		data := mergeFile(t, f.pkts, f.truncate)
		switch codec {
		case "gzip":
			data = gz(data)
		case "zstd":
			data = zst(t, data)
		}
		s, err := NewSource(fmt.Sprintf("f%d", i), bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	m := Merge(srcs, MergeOptions{ClockSkew: skew, ReadAheadPlain: codec == "none-ahead"})
	defer m.Close()
	var got []string
	mostAhead := 0
	for range 100 {
		if m.aheadN > maxReadAhead {
			t.Fatalf("%d sources read ahead at once, at most %d", m.aheadN, maxReadAhead)
		}
		mostAhead = max(mostAhead, m.aheadN)
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		var ie *InputError
		if errors.As(err, &ie) {
			got = append(got, fmt.Sprintf("err:%s@%d", ie.File, ie.Offset))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %v: want a truncation", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("error %v (%T): want an *InputError", err, err)
		}
		at := float64(p.CI.Timestamp.Sub(t0)) / float64(time.Millisecond)
		got = append(got, fmt.Sprintf("%s@%g", p.Data, at))
	}
	if g := strings.Join(got, " "); g != want {
		t.Errorf("merged:\n got %s\nwant %s", g, want)
	}
	if _, err := m.Next(); err != io.EOF {
		t.Errorf("after the end: %v, want io.EOF", err)
	}
	if l := m.Layout(); l != layout {
		t.Errorf("layout %v, want %v", l, layout)
	}
	for i, s := range srcs {
		if a := s.pb.ahead; a != nil && a.ended && (len(a.empty) > 0 || a.cur != nil) {
			t.Errorf("source %d read to its end still holds chunks", i)
		}
	}
	if codec == "none" && mostAhead > 0 {
		t.Errorf("an uncompressed source was read ahead without ReadAheadPlain")
	}
}

// TestMergeSpans: each source's span and count, skew applied.
func TestMergeSpans(t *testing.T) {
	a, _ := NewSource("a", bytes.NewReader(mergeFile(t, []mpkt{{"1", ms(4)}, {"2", ms(2)}, {"3", ms(6)}}, 0)))
	b, _ := NewSource("b", bytes.NewReader(mergeFile(t, []mpkt{{"1", ms(1)}}, 0)))
	m := Merge([]*Source{a, b}, MergeOptions{ClockSkew: []time.Duration{0, time.Second}})
	for {
		if _, err := m.Next(); err != nil {
			break
		}
	}
	want := []Span{
		{Name: "a", First: t0.Add(ms(2)), Last: t0.Add(ms(6)), Packets: 3},
		{Name: "b", First: t0.Add(ms(1001)), Last: t0.Add(ms(1001)), Packets: 1},
	}
	got := m.Spans()
	for i := range want {
		if got[i].Name != want[i].Name || !got[i].First.Equal(want[i].First) || !got[i].Last.Equal(want[i].Last) || got[i].Packets != want[i].Packets {
			t.Errorf("span %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if m.Layout() != Consecutive {
		t.Errorf("layout %v", m.Layout())
	}
}

// benchMergeFiles writes k interleaved files of n packets of 1400 bytes.
func benchMergeFiles(tb testing.TB, k, n int) ([][]byte, int64) {
	data := strings.Repeat("k", 1400)
	files := make([][]byte, k)
	var size int64
	for f := range files {
		pkts := make([]mpkt, n)
		for i := range pkts {
			pkts[i] = mpkt{data, time.Duration(i*k+f) * time.Microsecond}
		}
		files[f] = mergeFile(tb, pkts, 0)
		size += int64(len(files[f]))
	}
	return files, size
}

func openMerge(tb testing.TB, files [][]byte) *Merged {
	srcs := make([]*Source, len(files))
	for i, f := range files {
		s, err := NewSource(fmt.Sprint(i), bytes.NewReader(f))
		if err != nil {
			tb.Fatal(err)
		}
		srcs[i] = s
	}
	return Merge(srcs, MergeOptions{ClockSkew: []time.Duration{time.Millisecond}})
}

func BenchmarkMerge(b *testing.B) {
	const n = 2000
	for _, k := range []int{1, 2, 5, 32} {
		b.Run(fmt.Sprintf("files=%d", k), func(b *testing.B) {
			files, size := benchMergeFiles(b, k, n)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				m := openMerge(b, files)
				got := 0
				for {
					_, err := m.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				m.Close()
				if got != k*n {
					b.Fatalf("merged %d packets, want %d", got, k*n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k*n), "ns/packet")
		})
	}
}

// TestMergeAllocations pins the no allocation per packet contract, once
// every source has given its first packet.
func TestMergeAllocations(t *testing.T) {
	files, _ := benchMergeFiles(t, 5, 2000)
	m := openMerge(t, files)
	defer m.Close()
	if _, err := m.Next(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5000, func() {
		if _, err := m.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
}

// TestMergeReadsAhead: compressed files too large for the first read are
// decompressed ahead into chunks while they are read, at most
// maxReadAhead at once, and give the same packets as uncompressed;
// rotated files read one after the other reuse one set of chunks.
func TestMergeReadsAhead(t *testing.T) {
	label := strings.Repeat("x", 1000)
	files := func(n int, rotated bool) [][]mpkt {
		var out [][]mpkt
		for f := range n {
			var pkts []mpkt
			for i := range 1000 { // 1 MB a file
				at := 4*i + f // interleaved in time
				if rotated {
					at = 1000*f + i
				}
				pkts = append(pkts, mpkt{fmt.Sprintf("%d-%04d-%s", f, i, label), ms(float64(at))})
			}
			out = append(out, pkts)
		}
		return out
	}
	tests := []struct {
		name      string
		files     [][]mpkt
		mostAhead int // sources read ahead at once, at most
		sets      int // sets of buffers made
	}{
		{"interleaved", files(4, false), maxReadAhead, maxReadAhead},
		{"rotated", files(6, true), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testMergeReadsAhead(t, tt.files, tt.mostAhead, tt.sets)
		})
	}
}

func testMergeReadsAhead(t *testing.T, files [][]mpkt, wantAhead, wantSets int) {
	var bufs int
	read := func(compress bool) (labels []string, mostAhead int) {
		var srcs []*Source
		for i, pkts := range files {
			data := mergeFile(t, pkts, 0)
			if compress {
				data = gz(data)
			}
			s, err := NewSource(fmt.Sprintf("f%d", i), bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, s)
		}
		m := Merge(srcs, MergeOptions{})
		defer m.Close()
		for {
			mostAhead = max(mostAhead, m.aheadN)
			p, err := m.Next()
			if err == io.EOF {
				bufs = len(m.bufs.free) // every source ended: all given back
				return labels, mostAhead
			}
			if err != nil {
				t.Fatal(err)
			}
			labels = append(labels, string(p.Data[:6]))
		}
	}
	plain, _ := read(false)
	got, mostAhead := read(true)
	if len(got) != 1000*len(files) || !slices.Equal(got, plain) {
		t.Errorf("gzip: %d packets, equal to uncompressed: %v", len(got), slices.Equal(got, plain))
	}
	if mostAhead != wantAhead {
		t.Errorf("at most %d sources read ahead at once, want %d", mostAhead, wantAhead)
	}
	// A set's chunks are made as the decompressor needs them (aheadFirst,
	// then more while it runs ahead of the parser, up to
	// aheadChunksCompressed): how many depends on the two goroutines'
	// speeds (under -race the parser may keep up with 5), so the sets
	// are counted by the most a set can have.
	if lo, hi := (wantSets-1)*aheadChunksCompressed, wantSets*aheadChunksCompressed; bufs <= lo || bufs > hi {
		t.Errorf("%d chunks made, want %d sets: %d to %d", bufs, wantSets, lo+1, hi)
	}
}

// TestMergeEndSources ends sources early, before the first packet and
// after some, the one whose packet was just returned or another: the merge
// goes on with the others' packets, in order, none of the ended ones'.
func TestMergeEndSources(t *testing.T) {
	var files [][]byte
	for _, p := range []string{"a", "b", "c"} {
		var pkts []mpkt
		for k := range 4 {
			pkts = append(pkts, mpkt{fmt.Sprintf("%s%d", p, k), ms(float64(3*k + len(files)))})
		}
		files = append(files, mergeFile(t, pkts, 0))
	}
	tests := []struct {
		name  string
		after int      // packets read before the end
		end   []string // sources ended (openMerge names them 0, 1, 2)
		want  []string // the packets after the end
	}{
		{"before the first", 0, []string{"1"}, []string{"a0", "c0", "a1", "c1", "a2", "c2", "a3", "c3"}},
		{"the one just returned", 4, []string{"0"}, []string{"b1", "c1", "b2", "c2", "b3", "c3"}},
		{"another", 4, []string{"1"}, []string{"c1", "a2", "c2", "a3", "c3"}},
		{"two of three", 2, []string{"0", "2"}, []string{"b1", "b2", "b3"}},
		{"the last one", 11, []string{"2"}, nil},
		{"all", 1, []string{"0", "1", "2"}, nil},
		{"none", 3, nil, []string{"a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := openMerge(t, files)
			defer m.Close()
			for range tt.after {
				if _, err := m.Next(); err != nil {
					t.Fatal(err)
				}
			}
			m.EndSources(func(s *Source) bool { return slices.Contains(tt.end, s.Name()) })
			var got []string
			for {
				p, err := m.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(p.Data))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("after the end: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSourceHolds: the packets of a pcap and of a pcapng, compressed or
// not, can be held once a merge reads it ahead; Size is the size of the
// file opened, -1 for a Source made from a reader.
func TestSourceHolds(t *testing.T) {
	// A megabyte: more than a Source reads at its opening, so that a pcap
	// is read ahead into chunks.
	var pkts []Packet
	for i := range 1000 {
		p := testPackets(t)[i%3]
		p.Data = append(p.Data, make([]byte, 1000)...)
		p.CI.CaptureLength, p.CI.Length = len(p.Data), len(p.Data)
		p.CI.Timestamp = t0.Add(time.Duration(i) * time.Millisecond)
		pkts = append(pkts, p)
	}
	pcap := pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts)
	ng, _ := pcapngFile(t, pkts)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"pcap", pcap},
		{"pcap.gz", gz(pcap)},
		{"pcap.zst", zst(t, pcap)},
		{"pcapng", ng},
		{"pcapng.zst", zst(t, ng)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if s.Size() != int64(len(tc.file)) {
				t.Errorf("Size() = %d, want %d", s.Size(), len(tc.file))
			}
			if r, err := NewSource(tc.name, bytes.NewReader(tc.file)); err != nil || r.Size() != -1 {
				t.Errorf("from a reader: %v, Size() = %d", err, r.Size())
			}
			m := Merge([]*Source{s}, MergeOptions{ReadAheadPlain: true})
			defer m.Close()
			held := false
			for {
				p, err := m.Next()
				if err != nil {
					break
				}
				if h, ok := p.Hold(); ok {
					held = true
					h.Release()
				}
			}
			if !held {
				t.Error("no packet held")
			}
		})
	}
}
