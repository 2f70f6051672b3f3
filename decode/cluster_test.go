package decode

import (
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// feedTo delivers script on a new connection from client to b, as feed.
func feedTo(d *Decoder, b netip.AddrPort, script []msg) {
	c := d.NewStream(client, b, t0)
	for i, m := range script {
		c.Data(m.fromClient, m.frame, t0.Add(time.Duration(i)*time.Millisecond))
	}
	c.Close(t0.Add(time.Hour))
}

// clusterMetadata is a Metadata response of version v naming cluster id
// (nil: none) and brokers host:port.
func clusterMetadata(v int16, id *string, brokers ...string) []msg {
	r := kmsg.NewPtrMetadataResponse()
	r.Version = v
	r.ClusterID = id
	for i, b := range brokers {
		ap := netip.MustParseAddrPort(b)
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port = int32(i), ap.Addr().String(), int32(ap.Port())
		r.Brokers = append(r.Brokers, br)
	}
	// A host name, which is not resolved.
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 99, "kafka-99.example", 9092
	r.Brokers = append(r.Brokers, br)
	return []msg{
		{fromClient: true, frame: requestFrame(&kmsg.MetadataRequest{Version: v}, 1, "cid")},
		{fromClient: false, frame: responseFrame(r, 1)},
	}
}

func describeCluster(v int16, id string, brokers ...string) []msg {
	r := kmsg.NewPtrDescribeClusterResponse()
	r.Version = v
	r.ClusterID = id
	for i, b := range brokers {
		ap := netip.MustParseAddrPort(b)
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port = int32(i), ap.Addr().String(), int32(ap.Port())
		r.Brokers = append(r.Brokers, br)
	}
	return []msg{
		{fromClient: true, frame: requestFrame(&kmsg.DescribeClusterRequest{Version: v}, 1, "cid")},
		{fromClient: false, frame: responseFrame(r, 1)},
	}
}

// TestClusters: Metadata v2+ and DescribeCluster responses name the
// cluster of the broker that answered and of every broker they list by IP
// address, for every connection of the capture from then on;
// Options.Clusters names the others, and takes over the capture's cluster
// ID where it names one of the ID's brokers.
func TestClusters(t *testing.T) {
	var (
		b4 = netip.MustParseAddrPort("10.0.0.4:9092") // the broker of feed
		b5 = netip.MustParseAddrPort("10.0.0.5:9092")
		b6 = netip.MustParseAddrPort("10.0.0.6:9092")
		b7 = netip.MustParseAddrPort("10.0.0.7:9092")
	)
	tests := []struct {
		name     string
		clusters []Cluster
		before   []msg // on a connection to b4, before the produces
		want     map[netip.AddrPort]string
	}{
		{"nothing told", nil, nil, map[netip.AddrPort]string{b4: "", b5: ""}},
		{"Metadata v1: no cluster ID", nil, clusterMetadata(1, nil, "10.0.0.5:9092"), map[netip.AddrPort]string{b4: "", b5: ""}},
		{"Metadata v2", nil, clusterMetadata(2, kmsg.StringPtr("c1"), "10.0.0.5:9092"),
			map[netip.AddrPort]string{b4: "c1", b5: "c1", b6: ""}},
		{"Metadata v12", nil, clusterMetadata(12, kmsg.StringPtr("c1"), "10.0.0.5:9092", "10.0.0.6:9092"),
			map[netip.AddrPort]string{b4: "c1", b5: "c1", b6: "c1", b7: ""}},
		{"Metadata v12, null cluster ID", nil, clusterMetadata(12, nil, "10.0.0.5:9092"), map[netip.AddrPort]string{b4: "", b5: ""}},
		{"DescribeCluster v0", nil, describeCluster(0, "c2", "10.0.0.6:9092"), map[netip.AddrPort]string{b4: "c2", b6: "c2", b5: ""}},
		{"DescribeCluster v1", nil, describeCluster(1, "c2", "10.0.0.6:9092"), map[netip.AddrPort]string{b4: "c2", b6: "c2", b5: ""}},
		{"named only", []Cluster{{Name: "prod", Brokers: []netip.AddrPort{b6}}}, nil,
			map[netip.AddrPort]string{b4: "", b6: "prod"}},
		{"named, and the capture's ID of a named broker takes the name", []Cluster{{Name: "prod", Brokers: []netip.AddrPort{b5}}},
			clusterMetadata(12, kmsg.StringPtr("c1"), "10.0.0.5:9092"), map[netip.AddrPort]string{b4: "prod", b5: "prod", b6: ""}},
		{"a name wins over the capture's other ID", []Cluster{{Name: "prod", Brokers: []netip.AddrPort{b4}}, {Name: "dr", Brokers: []netip.AddrPort{b5}}},
			clusterMetadata(12, kmsg.StringPtr("c1"), "10.0.0.5:9092"), map[netip.AddrPort]string{b4: "prod", b5: "dr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s sink
			d := New(&s, Options{Clusters: tt.clusters})
			if tt.before != nil {
				feedTo(d, b4, tt.before)
			}
			if errs := d.Errors(); len(errs) > 0 {
				t.Fatalf("errors %q", errs)
			}
			order := []netip.AddrPort{b4, b5, b6, b7}
			for _, b := range order {
				if _, ok := tt.want[b]; ok {
					feedTo(d, b, versionScript(7, 9))
				}
			}
			if len(s.xs) != len(tt.want) {
				t.Fatalf("%d exchanges, want %d", len(s.xs), len(tt.want))
			}
			for _, x := range s.xs {
				if want := tt.want[x.Conn.Broker]; x.Cluster != want {
					t.Errorf("exchange to %s: cluster %q, want %q", x.Conn.Broker, x.Cluster, want)
				}
			}
		})
	}
}

// TestClustersInOrder: an exchange completed before the response that
// names its cluster is of no known cluster; a later response naming
// another cluster for an address moves it.
func TestClustersInOrder(t *testing.T) {
	var s sink
	d := New(&s, Options{})
	b5 := netip.MustParseAddrPort("10.0.0.5:9092")
	feedTo(d, b5, versionScript(7, 9))
	feedTo(d, broker, clusterMetadata(12, kmsg.StringPtr("c1"), "10.0.0.5:9092"))
	feedTo(d, b5, versionScript(7, 10))
	feedTo(d, broker, clusterMetadata(12, kmsg.StringPtr("c2"), "10.0.0.5:9092"))
	feedTo(d, b5, versionScript(7, 11))
	var got []string
	for _, x := range s.xs {
		got = append(got, x.Cluster)
	}
	if len(got) != 3 || got[0] != "" || got[1] != "c1" || got[2] != "c2" {
		t.Errorf("clusters %q, want \"\", c1, c2", got)
	}
}
