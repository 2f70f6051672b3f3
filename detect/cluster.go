package detect

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/kdupcap/kdupcap/decode"
)

// Clusters. Producer IDs are per cluster, and every cluster hands out 0, 1,
// 2...: a host producing to two clusters (a dual write, two applications,
// kfake and other small clusters) may send batches of one producer ID,
// epoch and sequence to both, or the same records to both. Attempts to two
// clusters are never one batch sent twice.
//
// decode names the cluster of each exchange's broker (Exchange.Cluster):
// the name a user gave its address (decode.Options.Clusters, the
// --cluster flag), else the cluster ID of a Metadata (v2+) or
// DescribeCluster response that listed the address or came from it; empty
// when the capture has not told (yet). The rules:
//
//   - Attempts to two known clusters that differ never group: the second
//     is filed apart, under its cluster (keyCluster).
//   - A known and an unknown cluster may group: a capture often shows a
//     cluster's Metadata only after the first attempt to it, and a
//     Metadata response lists every broker of its cluster.
//   - Where a match rests on the producer ID and sequence alone (the bytes
//     differ: a rebuilt retry, or another cluster's producer), the
//     attempts must go to one broker address or to brokers known to be of
//     one cluster (otherProducer): an idempotent producer re-sends the
//     bytes it sent to another broker after a leader move, so the rule
//     loses little, and without it two clusters' producers 0 of one
//     client.id would group.
//   - Record-level matching (recordmatch.go) files a record under its
//     cluster when known, else under its broker's address: the same
//     records written to two clusters are not a re-send, and a rebuilt
//     retry goes to the partition's leader, the same broker unless the
//     leader moved.
//
// Brokers learned as another's copy (a proxy's address, NAT) stand for
// it (echo.go).

// maxClusters bounds the clusters numbered; the exchanges of later ones
// are taken as of an unknown cluster.
const maxClusters = 1 << 12

// clusterOf numbers the cluster named name, 0 for none.
func (d *Detector) clusterOf(name string) uint16 {
	if name == "" {
		return 0
	}
	if i, ok := d.clusterIdx[name]; ok {
		return i
	}
	if len(d.clusterNames) >= maxClusters {
		return 0
	}
	if d.clusterIdx == nil {
		d.clusterIdx = make(map[string]uint16)
	}
	d.clusterNames = append(d.clusterNames, name)
	i := uint16(len(d.clusterNames))
	d.clusterIdx[name] = i
	return i
}

// Clusters returns how many clusters the exchanges so far named
// (Exchange.Cluster). A caller that shows Finding.Cluster only when there
// were several may call it from OnFinding, as Stats.
func (d *Detector) Clusters() int { return len(d.clusterNames) }

// clusterName is the name of cluster i, "" for 0.
func (d *Detector) clusterName(i uint16) string {
	if i == 0 || int(i) > len(d.clusterNames) {
		return ""
	}
	return d.clusterNames[i-1]
}

// finding is b's Finding with its cluster named.
func (d *Detector) finding(b *batch) Finding {
	f := b.finding(&d.ends)
	f.Cluster = d.clusterName(b.cluster)
	return f
}

// apart reports whether at must be filed apart from the batch its key
// found (slot, found): both of known clusters that differ; or, none found,
// whether a batch filed apart under at's cluster may hold it.
func (d *Detector) apart(slot int32, found bool, at *attempt) bool {
	if at.cluster == 0 {
		return false
	}
	if found {
		c := d.slab.at(slot).cluster
		return c != 0 && c != at.cluster
	}
	return d.byCluster > 0
}

// sameClusterKnown reports whether at went to a broker known to be of the
// cluster of b's attempts: one of their broker addresses, or a broker of
// their known cluster.
func (d *Detector) sameClusterKnown(b *batch, conn *decode.ConnInfo, at *attempt) bool {
	if at.cluster != 0 && at.cluster == b.cluster {
		return true
	}
	br := d.resolveBroker(conn.Broker)
	if d.resolveBroker(b.first.conn.Broker) == br {
		return true
	}
	for i := range b.more {
		if d.resolveBroker(b.more[i].conn.Broker) == br {
			return true
		}
	}
	return false
}

// writePlace hashes where at went, for record-level matching: its cluster
// when known, else its broker's address.
func (d *Detector) writePlace(h *maphash.Hash, at *attempt) {
	var b [8]byte
	if at.cluster != 0 {
		h.WriteByte(1)
		binary.LittleEndian.PutUint16(b[:2], at.cluster)
		h.Write(b[:2])
		return
	}
	h.WriteByte(2)
	br := d.resolveBroker(at.conn.Broker)
	a := br.Addr().Unmap().As16()
	h.Write(a[:])
	binary.LittleEndian.PutUint16(b[:2], br.Port())
	h.Write(b[:2])
}
