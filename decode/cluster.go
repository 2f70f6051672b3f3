package decode

import (
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Clusters: which cluster each broker address belongs to, so that detect
// never takes attempts to two clusters for one batch sent twice (producer
// IDs are per cluster: two clusters both hand out producer ID 0).
//
// The capture tells from two responses:
//   - Metadata (API key 3) v2 and later carry ClusterID and the brokers
//     (node ID, host, port); v0 and v1 carry no ClusterID, and are not read
//     for it.
//   - DescribeCluster (API key 60, KIP-700, all versions: v0-v2) carries
//     ClusterID and the brokers too; admin clients send it.
//
// Each such response puts the address of the broker that answered it and
// every listed broker whose host is an IP address (a host name is not
// resolved) in its cluster; a later response naming another cluster for an
// address moves it. Options.Clusters names clusters where the capture
// cannot tell (the --cluster flag); a name given there wins over the
// capture's cluster ID for its addresses, and a cluster ID shown for one of
// them takes the given name for all its brokers.
//
// The names are shared by every connection of the capture (Shared, in
// capture order): Shared.Resolve sets each Exchange's Cluster from its
// broker's address, empty while nothing told.

// Cluster names the brokers of one cluster (Options.Clusters).
type Cluster struct {
	Name    string
	Brokers []netip.AddrPort
}

// keyDescribeCluster is DescribeCluster's API key.
const keyDescribeCluster = 60

// Bounds on what the responses may teach: brokers per response, addresses
// over the run.
const (
	maxClusterBrokers   = 1024
	maxClusterAddresses = 1 << 14
)

// clusterMap is the cluster of each broker address.
type clusterMap struct {
	// named: the names Options.Clusters gave; learned: the cluster IDs
	// the capture showed; idName: the given name of a cluster ID, known
	// when a response showed the ID for a named address.
	named   map[netip.AddrPort]string
	learned map[netip.AddrPort]string
	idName  map[string]string
}

// NameClusters names the clusters of cs's broker addresses, as
// Options.Clusters does; a later name for an address replaces an earlier.
func (s *Shared) NameClusters(cs []Cluster) {
	for _, c := range cs {
		if c.Name == "" {
			continue
		}
		for _, a := range c.Brokers {
			if s.clusters.named == nil {
				s.clusters.named = make(map[netip.AddrPort]string)
			}
			s.clusters.named[unmapped(a)] = c.Name
		}
	}
}

// ClusterOf returns the cluster of the broker at a: its given name, else
// the name given to its cluster ID, else the ID; "" when unknown.
func (s *Shared) ClusterOf(a netip.AddrPort) string {
	m := &s.clusters
	if len(m.named) == 0 && len(m.learned) == 0 {
		return ""
	}
	a = unmapped(a)
	if n, ok := m.named[a]; ok {
		return n
	}
	id, ok := m.learned[a]
	if !ok {
		return ""
	}
	if n, ok := m.idName[id]; ok {
		return n
	}
	return id
}

// learnCluster puts brokers in cluster id.
func (s *Shared) learnCluster(id string, brokers []netip.AddrPort) {
	m := &s.clusters
	if m.learned == nil {
		m.learned = make(map[netip.AddrPort]string)
	}
	for _, a := range brokers {
		if n, ok := m.named[a]; ok {
			if m.idName == nil {
				m.idName = make(map[string]string)
			}
			if _, ok := m.idName[id]; !ok && len(m.idName) < maxClusterAddresses {
				m.idName[id] = n
			}
		}
		if _, ok := m.learned[a]; ok || len(m.learned) < maxClusterAddresses {
			m.learned[a] = id
		}
	}
}

func unmapped(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// shareCluster hands on what one response showed: cluster id holds the
// broker that answered on c and the listed brokers whose host is an IP
// address.
func (c *Conn) shareCluster(id string, n int, broker func(i int) (host string, port int32), ts time.Time) {
	if id == "" || c.info == nil {
		return
	}
	addrs := make([]netip.AddrPort, 0, 1+min(n, maxClusterBrokers))
	addrs = append(addrs, unmapped(c.info.Broker))
	for i := range min(n, maxClusterBrokers) {
		host, port := broker(i)
		ip, err := netip.ParseAddr(host)
		if err != nil || port <= 0 || port > 65535 {
			continue
		}
		addrs = append(addrs, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	c.d.share(Event{Kind: EventCluster, Conn: c.info, Name: c.d.intern(id), Brokers: addrs, Time: ts})
}

// metadataCluster hands on the cluster a Metadata response (v2+) showed.
func (c *Conn) metadataCluster(resp *kmsg.MetadataResponse, ts time.Time) {
	if resp.ClusterID == nil {
		return
	}
	c.shareCluster(*resp.ClusterID, len(resp.Brokers), func(i int) (string, int32) {
		return resp.Brokers[i].Host, resp.Brokers[i].Port
	}, ts)
}

// describeClusterResponse reads the cluster a DescribeClusterResponse
// answering p showed.
func (c *Conn) describeClusterResponse(dir *direction, p pending, body []byte, pos int64, ts time.Time) {
	var resp kmsg.DescribeClusterResponse
	resp.Version = p.version
	if err := resp.ReadFrom(body); err != nil {
		c.d.errorf(c, dir.fromA, pos, "describe cluster v%d response correlation %d: %v", p.version, p.corr, err)
		return
	}
	if resp.ErrorCode != 0 {
		return
	}
	c.shareCluster(resp.ClusterID, len(resp.Brokers), func(i int) (string, int32) {
		return resp.Brokers[i].Host, resp.Brokers[i].Port
	}, ts)
}
