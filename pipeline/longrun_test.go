package pipeline

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/internal/gencap"
)

// TestLiveMemoryBound runs the live pipeline (evidence on, findings streamed)
// over many hours of synthetic traffic: the same generated capture of many
// short-lived connections replayed round after round with its clock moved on,
// so connections, batches, pending requests and evidence churn through every
// bound. The heap after the warm-up rounds must not grow with the rounds.
func TestLiveMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	var capBuf bytes.Buffer
	m, err := gencap.Generate(&capBuf, gencap.Config{TargetBytes: 8 << 20, Conns: 200, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	// Read the packets once; each round replays them shifted in time.
	src, err := capture.NewSource("gen", bytes.NewReader(capBuf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	type pkt struct {
		p    capture.Packet
		data []byte
	}
	var pkts []pkt
	for {
		p, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, pkt{p, append([]byte(nil), p.Data...)})
	}
	span := pkts[len(pkts)-1].p.CI.Timestamp.Sub(pkts[0].p.CI.Timestamp)

	findings := 0
	p := newSingle(stages{
		dec: decode.Options{Ports: []uint16{9092}, MaxConnections: maxLiveConnections},
		det: detect.Options{Window: time.Minute, Streaming: true, Settle: 5 * time.Second,
			OnFinding: func(detect.Finding) { findings++ }},
		asm: capture.AssemblerOptions{IdleTimeout: 30 * time.Second,
			Evidence: capture.NewEvidence(capture.EvidenceOptions{TotalBytes: 16 << 20, PerConnBytes: 1 << 20})},
	})
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	const rounds, warmup = 12, 4
	var base uint64
	for round := range rounds {
		// Each round starts well after the last one ended: every connection
		// of the previous round is idle-closed and its state let go.
		shift := time.Duration(round) * (span + 2*time.Minute)
		for _, q := range pkts {
			pp := q.p
			pp.Data = q.data
			pp.CI.Timestamp = pp.CI.Timestamp.Add(shift)
			p.asm.Add(pp)
		}
		p.asm.Tick(pkts[len(pkts)-1].p.CI.Timestamp.Add(shift + 2*time.Minute))
		p.det.Advance(pkts[len(pkts)-1].p.CI.Timestamp.Add(shift + 2*time.Minute))
		if round == warmup-1 {
			base = heap()
		}
	}
	end := heap()
	total := time.Duration(rounds) * (span + 2*time.Minute)
	t.Logf("%d rounds, %v of traffic, %d packets, %d findings (%d re-sends a round); heap after warm-up %d KB, at the end %d KB",
		rounds, total, rounds*len(pkts), findings, m.Totals.Resends, base>>10, end>>10)
	if want := int(m.Totals.Resends) * rounds; findings != want {
		t.Errorf("%d findings, want %d (every round's re-sends)", findings, want)
	}
	// 8 rounds after the warm-up replayed 8x the traffic: a leak of even a
	// few bytes a packet or a connection would show.
	if end > base+4<<20 {
		t.Errorf("heap grew from %d KB to %d KB over %d rounds: state is not bounded", base>>10, end>>10, rounds-warmup)
	}
	// The connections listed for the summary are bounded too: a broker
	// host sees millions of short-lived connections in a week.
	if n, all := len(p.dec.Connections()), p.dec.Stats().Connections; n > 1000 || all < rounds*100 {
		t.Errorf("%d connections listed of %d seen: the list is not bounded", n, all)
	}
	if st := p.asm.Stats(); st.TCPConnections < rounds*100 || st.Evidence.DroppedBytes == 0 {
		t.Errorf("the run did not churn through the bounds: %d connections, %d evidence bytes dropped",
			st.TCPConnections, st.Evidence.DroppedBytes)
	}
}
