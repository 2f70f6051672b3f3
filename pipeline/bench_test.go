package pipeline

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/gencap"
)

// benchCapture returns the capture to measure: $KDUPCAP_BENCH_PCAP (as made
// by `make bench`, with its manifest beside it), or a 100 MB one generated
// once per process into benchTemp, which TestMain removes.
var benchCapture = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("KDUPCAP_BENCH_PCAP"); p != "" {
		return p, nil
	}
	dir, err := os.MkdirTemp("", "kdupcap-bench")
	if err != nil {
		return "", err
	}
	benchTemp.Store(&dir)
	path := filepath.Join(dir, "bench.pcap")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	m, err := gencap.Generate(f, gencap.Config{TargetBytes: 100 << 20})
	if err != nil {
		return "", err
	}
	mf, err := os.Create(gencap.ManifestPath(path))
	if err != nil {
		return "", err
	}
	defer mf.Close()
	return path, m.WriteJSON(mf)
})

// benchTemp is the directory benchCapture generated its capture in, if it
// did.
var benchTemp atomic.Pointer[string]

// TestMain removes the capture the benchmarks generated (100 MB a run).
func TestMain(m *testing.M) {
	code := m.Run()
	if dir := benchTemp.Load(); dir != nil {
		os.RemoveAll(*dir)
	}
	os.Exit(code)
}

func benchInput(b *testing.B) (string, *gencap.Manifest, int64) {
	b.Helper()
	path, err := benchCapture()
	if err != nil {
		b.Fatal(err)
	}
	mf, err := os.Open(gencap.ManifestPath(path))
	if err != nil {
		b.Fatalf("manifest beside %s: %v", path, err)
	}
	defer mf.Close()
	m, err := gencap.ReadManifest(mf)
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, m, st.Size()
}

// BenchmarkAnalyze measures a whole Analysis (read, decode, reassemble,
// Kafka decode, detect) on a generated capture and fails if the findings
// differ from the generator's manifest.
func BenchmarkAnalyze(b *testing.B) {
	path, m, size := benchInput(b)
	opts := Options{Sniff: true, RecordMatch: os.Getenv("KDUPCAP_BENCH_RECORDS") != "0", Workers: 1}
	if m.Port != 0 { // a capture of real clients: their broker's port, as analyze --port
		opts.Sniff, opts.Ports = false, []uint16{m.Port}
	}
	if w, err := strconv.Atoi(os.Getenv("KDUPCAP_BENCH_WORKERS")); err == nil {
		opts.Workers = w
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var packets int64
	for b.Loop() {
		a := NewAnalysis(opts)
		if errs := a.Read(Inputs{Files: []string{path}}, nil); len(errs) > 0 {
			b.Fatal(errs[0])
		}
		findings := a.Finish()
		packets = a.Summary(nil).Packets
		if err := compareManifest(findings, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(packets)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkReadLoop is the practical limit: pcapgo reading every packet of
// the same file with no decoding.
func BenchmarkReadLoop(b *testing.B) {
	path, _, size := benchInput(b)
	b.SetBytes(size)
	b.ReportAllocs()
	var packets int64
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := pcapgo.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		packets = 0
		for {
			_, _, err := r.ZeroCopyReadPacketData()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			packets++
		}
		f.Close()
	}
	b.ReportMetric(float64(packets)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// compareManifest checks findings against what the generator re-sent.
func compareManifest(findings []detect.Finding, m *gencap.Manifest) error {
	found := make([]gencap.Found, len(findings))
	for i, f := range findings {
		ids := make([]int32, len(f.Attempts))
		for j, a := range f.Attempts {
			ids[j] = a.CorrelationID
		}
		found[i] = gencap.Found{Client: f.Client.String(), Broker: f.Broker.String(), Topic: f.Topic, Partition: f.Partition,
			CorrelationIDs: ids, Verdict: string(f.Verdict), AppendedOffsets: f.AppendedOffsets}
	}
	return m.Check(found)
}
