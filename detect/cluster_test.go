package detect

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/kdupcap/kdupcap/decode"
)

// clusterB is a connection of conn1's client (10.0.0.1, client.id
// "rdkafka") to a broker of another cluster; conn3 (helpers of the scope
// tests) is of the same client to another broker of conn1's.
var clusterB = &decode.ConnInfo{ID: 5, Client: netip.MustParseAddrPort("10.0.0.1:50009"),
	Broker: netip.MustParseAddrPort("10.1.0.2:9092"), DetectedBy: "port", FirstSeen: t0}

// in names x's cluster, as decode's Shared.Resolve does.
func in(cluster string, x *decode.Exchange) *decode.Exchange { x.Cluster = cluster; return x }

// TestClusters: attempts to two clusters never group, even when both
// clusters handed out producer ID 0 and the sequences are equal, or the
// bytes are; the same cluster across brokers still groups (a re-send after
// NOT_LEADER_OR_FOLLOWER), and an attempt of an unknown cluster groups
// with one of a known cluster.
func TestClusters(t *testing.T) {
	tests := []struct {
		name     string
		all      bool // Options.AllRecords
		feed     []*decode.Exchange
		verdicts []Verdict
		cluster  string // of the first finding
		conns    []uint64
	}{
		{
			name: "producer ID 0 on two clusters, same sequence, other bytes",
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 0, 3, idem(1, 5))),
				in("B", ex(clusterB, 2, 20, 30, 0, 3, idem(1, 6))),
			},
		},
		{
			name: "producer ID 0 on two clusters the capture cannot tell: other brokers, other bytes",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 10, 0, 3, idem(1, 5)),
				ex(clusterB, 2, 20, 30, 0, 3, idem(1, 6)),
			},
		},
		{
			name: "producer ID 0 on two clusters, the second retries: its own finding only",
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 0, 3, idem(1, 5))),
				in("B", ex(clusterB, 2, 20, 30, 7, 9, idem(1, 6))),
				in("B", ex(clusterB, 3, 40, 50, 0, 9, idem(1, 6))),
			},
			verdicts: []Verdict{Deduplicated},
			cluster:  "B",
			conns:    []uint64{5, 5},
		},
		{
			name: "the same bytes to two clusters",
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 0, 3, plain(1))),
				in("B", ex(clusterB, 2, 20, 30, 0, 8, plain(1))),
			},
		},
		{
			name: "idempotent, the same bytes to two clusters",
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 0, 3, idem(1, 5))),
				in("B", ex(clusterB, 2, 20, 30, 0, 8, idem(1, 5))),
			},
		},
		{
			name: "rebuilt at another broker of the same cluster",
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 6, -1, idem(1, 5))),
				in("A", ex(conn3, 2, 100, 101, 0, 9, idem(1, 6))),
			},
			verdicts: []Verdict{Single},
			cluster:  "A",
			conns:    []uint64{1, 3},
		},
		{
			name: "NOT_LEADER_OR_FOLLOWER, retried at another broker, the cluster known only then",
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 1, 6, -1, plain(1)),
				in("A", ex(conn3, 2, 100, 101, 0, 9, plain(1))),
			},
			verdicts: []Verdict{Single},
			cluster:  "A",
			conns:    []uint64{1, 3},
		},
		{
			name: "a batch of each cluster held, then a retry of each",
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 7, 3, plain(1))),
				in("B", ex(clusterB, 2, 20, 30, 7, 8, plain(1))),
				in("B", ex(clusterB, 3, 40, 50, 0, 9, plain(1))),
				in("A", ex(conn1, 8, 60, 70, 0, 4, plain(1))),
			},
			verdicts: []Verdict{Duplicated, Duplicated},
			cluster:  "A",
			conns:    []uint64{1, 1},
		},
		{
			// A dual write: the application writes the same records to
			// both clusters, in batches of their own bytes, the first
			// answered with an error (the records are printed).
			name: "the same records to two clusters",
			all:  true,
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 7, 3, recs(0xa, 1, 2, 3))),
				in("B", ex(clusterB, 2, 20, 30, 0, 8, recs(0xb, 1, 2, 3))),
			},
		},
		{
			name: "the same records to two brokers the capture cannot tell apart",
			all:  true,
			feed: []*decode.Exchange{
				ex(conn1, 7, 0, 10, 7, 3, recs(0xa, 1, 2, 3)),
				ex(clusterB, 2, 20, 30, 0, 8, recs(0xb, 1, 2, 3)),
			},
		},
		{
			name: "the same records to one cluster",
			all:  true,
			feed: []*decode.Exchange{
				in("A", ex(conn1, 7, 0, 10, 7, 3, recs(0xa, 1, 2, 3))),
				in("A", ex(conn1, 8, 20, 30, 0, 8, recs(0xb, 1, 2, 3))),
			},
			verdicts: []Verdict{Duplicated},
			cluster:  "A",
			conns:    []uint64{1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(Options{AllRecords: tt.all})
			for _, x := range tt.feed {
				d.Produce(x)
			}
			got := d.Flush()
			var verdicts []Verdict
			for _, f := range got {
				verdicts = append(verdicts, f.Verdict)
			}
			if !reflect.DeepEqual(verdicts, tt.verdicts) {
				t.Fatalf("verdicts %v, want %v: %+v", verdicts, tt.verdicts, got)
			}
			if len(got) == 0 {
				return
			}
			f := got[0]
			var conns []uint64
			for _, a := range f.Attempts {
				conns = append(conns, a.ConnID)
			}
			if f.Cluster != tt.cluster || !reflect.DeepEqual(conns, tt.conns) {
				t.Errorf("cluster %q on connections %v, want %q on %v", f.Cluster, conns, tt.cluster, tt.conns)
			}
		})
	}
}

// TestClustersBounded: the batches filed under their cluster are forgotten
// with the batches.
func TestClustersBounded(t *testing.T) {
	d := New(Options{MaxBatches: 100})
	for k := range 10_000 {
		d.Produce(in("A", ex(conn1, int32(2*k), float64(k), float64(k)+0.5, 0, int64(k), plain(uint32(k)))))
		d.Produce(in("B", ex(clusterB, int32(2*k+1), float64(k), float64(k)+0.5, 0, int64(k), plain(uint32(k)))))
		if n := len(d.byBytes); n > 100 || n != d.remembered || d.byCluster > d.remembered {
			t.Fatalf("after %d exchanges: %d keys for %d batches (%d by cluster), want at most 100 and equal", k+1, n, d.remembered, d.byCluster)
		}
	}
	d.Flush()
	if len(d.byBytes) != 0 || d.byCluster != 0 {
		t.Errorf("Flush left %d keys, %d by cluster", len(d.byBytes), d.byCluster)
	}
}
