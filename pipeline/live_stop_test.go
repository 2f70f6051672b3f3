package pipeline

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/capture/live"
)

// ringSource is a live source whose ring holds the packets of a capture
// file, stamped as stamp says, then stays idle (live.ErrTimeout), or, with
// forever, hands its last packet on again and again.
type ringSource struct {
	pkts    []capture.Packet
	stamp   func(i int) time.Time
	forever bool
	next    int
}

func (r *ringSource) Next() (capture.Packet, error) {
	if r.next >= len(r.pkts) {
		if !r.forever {
			return capture.Packet{}, live.ErrTimeout
		}
		r.next = len(r.pkts) - 1
	}
	p := r.pkts[r.next]
	p.CI.Timestamp = r.stamp(r.next)
	r.next++
	return p, nil
}

func (r *ringSource) Stats() live.Stats { return live.Stats{} }

// pcapPackets reads the packets of a pcap file with pcapgo alone, not
// kdupcap's own reading: the capture as it is.
func pcapPackets(t *testing.T, path string) []capture.Packet {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var pkts []capture.Packet
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return pkts
		}
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, capture.Packet{Data: data, CI: ci, LinkType: r.LinkType()})
	}
}

// TestLiveStopDrains: a live run told to stop first reads what the ring
// holds of the traffic captured before the stop (an incident's last
// request and its answer, in a block the kernel hands over later), and
// nothing captured after it; traffic stamped before the stop that never
// pauses is read for a bounded time.
func TestLiveStopDrains(t *testing.T) {
	const file = "../testdata/kcat-nonidempotent-timeout.pcap"
	pkts := pcapPackets(t, file)
	// The capture's log (testdata/README.md): two batches held twice.
	const wantFindings = 2
	past := time.Now().Add(-time.Minute)
	tests := []struct {
		name         string
		stamp        func(i int) time.Time
		forever      bool
		wantPackets  int64
		wantFindings int
	}{
		{"captured before the stop", func(i int) time.Time { return past.Add(time.Duration(i) * time.Millisecond) }, false, int64(len(pkts)), wantFindings},
		{"captured after the stop", func(i int) time.Time { return time.Now().Add(time.Hour + time.Duration(i)*time.Millisecond) }, false, 0, 0},
		{"the second half after the stop", func(i int) time.Time {
			if i < len(pkts)/2 {
				return past.Add(time.Duration(i) * time.Millisecond)
			}
			return time.Now().Add(time.Hour)
		}, false, int64(len(pkts) / 2), -1},
		{"never pausing", func(i int) time.Time { return past.Add(time.Duration(i) * time.Millisecond) }, true, -1, wantFindings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &ringSource{pkts: pkts, stamp: tc.stamp, forever: tc.forever}
			l, err := NewLive(LiveOptions{Options: Options{Sniff: true}, Name: "test", Warnings: io.Discard}, src)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the stop comes before the run reads the ring
			start := time.Now()
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > drainMax+time.Second {
				t.Fatalf("the run went on %v after the stop", took)
			}
			l.Finish()
			sum := l.Summary()
			if tc.wantPackets >= 0 && sum.Packets != tc.wantPackets {
				t.Errorf("%d packets read, want %d (of %d)", sum.Packets, tc.wantPackets, len(pkts))
			}
			if tc.wantFindings >= 0 && sum.Findings != int64(tc.wantFindings) {
				t.Errorf("%d findings, want %d", sum.Findings, tc.wantFindings)
			}
		})
	}
}
