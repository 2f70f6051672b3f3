package pipeline

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/fleet"
)

// TestCorrelateHosts: a batch sent again through another host's capture
// is a fleet finding naming both hosts, its attempts each its host; one
// sent again on the same host is counted as one host's.
func TestCorrelateHosts(t *testing.T) {
	for _, tt := range []struct {
		name      string
		hosts     [2]string // the hosts that saw the first attempt and the retry
		scope     detect.Scope
		fleet     int64
		wantHosts []string
	}{
		{"two hosts", [2]string{"broker-1", "broker-2"}, detect.ScopeFleet, 1, []string{"broker-1", "broker-2"}},
		{"one host", [2]string{"broker-1", "broker-1"}, detect.ScopeClient, 0, []string{"broker-1", "broker-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1700000000, 0)
			id := "app"
			client := netip.MustParseAddr("10.1.0.1")
			encs := map[string]*fleet.Encoder{}
			var vals [][]byte
			for i, h := range tt.hosts {
				if encs[h] == nil {
					encs[h] = fleet.NewEncoder(fleet.EncoderOptions{Host: h, Run: uint64(len(encs) + 1)})
				}
				c := &decode.ConnInfo{ID: uint64(i + 1), Client: netip.AddrPortFrom(client, uint16(40000+i)),
					Broker: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i)}), 9092), DetectedBy: "port", FirstSeen: t0}
				req := t0.Add(time.Duration(i) * 10 * time.Millisecond)
				x := &decode.Exchange{Conn: c, ClientID: &id, CorrelationID: 1, Version: 9, Acks: -1, RequestTime: req,
					Responded: true, ResponseTime: req.Add(time.Millisecond),
					Batches: []decode.Batch{{Topic: "orders", Partition: 3, Magic: 2, CRC: 0xfeed, NumRecords: 10, Length: 1200,
						ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Hash: 0xabc,
						Response: &decode.PartitionResponse{BaseOffset: int64(10 * i)}}}}
				encs[h].Exchange(x, func(_, v []byte) { vals = append(vals, append([]byte(nil), v...)) })
			}
			src := &benchSource{vals: vals, dec: fleet.NewDecoder(0), merger: fleet.NewMerger(fleet.MergeOptions{})}
			var got []detect.Finding
			c := NewCorrelate(CorrelateOptions{Options: Options{Window: time.Minute}, Settle: time.Second,
				OnFinding: func(f detect.Finding) { got = append(got, f) }}, src)
			for src.next < len(src.vals) {
				evs, err := src.Poll(context.Background(), 0, c.buf[:0])
				if err != nil {
					t.Fatal(err)
				}
				c.feed(evs, time.Now())
				c.buf = evs[:0]
			}
			c.Finish()
			if len(got) == 0 {
				t.Fatal("no finding")
			}
			f := got[len(got)-1]
			var hosts []string
			for _, a := range f.Attempts {
				hosts = append(hosts, a.Host)
			}
			if f.Scope != tt.scope || !slices.Equal(hosts, tt.wantHosts) {
				t.Errorf("scope %s, attempts' hosts %q; want %s, %q", f.Scope, hosts, tt.scope, tt.wantHosts)
			}
			if c.fleet != tt.fleet || c.fleet+c.local != 1 {
				t.Errorf("%d fleet findings, %d of one host; want %d of 1", c.fleet, c.local, tt.fleet)
			}
		})
	}
}
