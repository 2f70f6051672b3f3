package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// The tests of capture duplicates and several clusters (issue 13): real
// captures of this repository given twice, rewritten into a proxy's two
// legs, or copied to another cluster, must give exactly the findings the
// original capture's facts (testdata/README.md) say, never one more.

// echoFact is what testdata/README.md says of one re-sent batch: its CRC,
// the verdict its log shows and the offsets the log holds it at.
type echoFact struct {
	crc     string
	verdict string
	offsets []int64
}

// echoCaptures are the committed captures these tests rewrite, with their
// README facts.
var echoCaptures = []struct {
	name  string
	facts []echoFact
}{
	// p0 1/0xf52dd7ef, 2/0xf52dd7ef, 3/0x093f198b, 4/0x093f198b; the
	// capture shows only each re-send's offset (2 and 4): unconfirmed.
	{"kgo-v13-nonidempotent-closed-after-append.pcap", []echoFact{
		{"0xf52dd7ef", "unconfirmed", []int64{2}}, {"0x093f198b", "unconfirmed", []int64{4}}}},
	// re-sent 0x53638ffb (offset 1) and 0x7bb13e7f (offset 2), answered
	// with no error at their original offsets: deduplicated.
	{"kgo-v13-idempotent-timeout.pcap", []echoFact{
		{"0x53638ffb", "deduplicated", []int64{1}}, {"0x7bb13e7f", "deduplicated", []int64{2}}}},
	// p0 2/0xaf65e89b and 4/0xaf65e89b, 5/0xc6aab9a9 and 7/0xc6aab9a9.
	{"kcat-nonidempotent-timeout.pcap", []echoFact{
		{"0xaf65e89b", "duplicated", []int64{2, 4}}, {"0xc6aab9a9", "duplicated", []int64{5, 7}}}},
}

// recordCaptures are the committed captures of record-level re-sends,
// with their README facts: the first record's offsets, the batches'
// relation, the CRCs of the attempts' batches.
var recordCaptures = []struct {
	name     string
	offsets  []int64
	relation string
	crcs     []string
}{
	// rec-sarama-none-0 at offsets 0 and 1, re-batched: correlation 1
	// (0x2abcbc96), then first in 3's batch 0xc1939ea8.
	{"sarama-nonidempotent-rebatched.pcap", []int64{0, 1}, "rebatched", []string{"0x2abcbc96", "0xc1939ea8"}},
	// rec-kafkago-gzip-3..5 at offsets 3-5 and 6-8, rebuilt: 0x805c0c4c,
	// then 0x5f783d62.
	{"kafkago-gzip-nonidempotent-rebuilt.pcap", []int64{3, 6}, "rebuilt", []string{"0x805c0c4c", "0x5f783d62"}},
}

// checkRecordFacts checks a capture's record-level findings against its
// README facts.
func checkRecordFacts(t *testing.T, what string, res cliResult, offsets []int64, relation string, crcs []string) {
	t.Helper()
	if len(res.Findings) != 0 || len(res.RecordFindings) != 1 {
		t.Fatalf("%s: %d batch and %d record findings, want the original's 0 and 1", what, len(res.Findings), len(res.RecordFindings))
	}
	f := res.RecordFindings[0]
	var got []string
	for _, a := range f.Attempts {
		if a.Batch != nil {
			got = append(got, a.Batch.CRC)
		}
	}
	if f.Verdict != "duplicated" || !slices.Equal(f.AppendedOffsets, offsets) || f.BatchRelation != relation || !slices.Equal(got, crcs) {
		t.Errorf("%s: %s at %v, %s, batches %v; want duplicated at %v, %s, %v", what, f.Verdict, f.AppendedOffsets, f.BatchRelation, got, offsets, relation, crcs)
	}
}

// factsOf is what the findings say of each batch, sorted by offset.
func factsOf(fs []cliFinding) []echoFact {
	out := make([]echoFact, 0, len(fs))
	for _, f := range fs {
		out = append(out, echoFact{f.BatchCRC, f.Verdict, f.AppendedOffsets})
	}
	slices.SortStableFunc(out, func(a, b echoFact) int {
		if len(a.offsets) == 0 || len(b.offsets) == 0 {
			return len(a.offsets) - len(b.offsets)
		}
		return int(a.offsets[0] - b.offsets[0])
	})
	return out
}

// echoSummary is the part of the summary line on capture duplicates.
type echoSummary struct {
	ProduceRequests int64 `json:"produce_requests"`
	EchoedRequests  int64 `json:"echoed_requests"`
	EchoLegs        []struct {
		FirstClient  string `json:"first_client"`
		FirstBroker  string `json:"first_broker"`
		SecondClient string `json:"second_client"`
		SecondBroker string `json:"second_broker"`
		Requests     int64  `json:"requests"`
	} `json:"echo_legs"`
	KafkaConnections []json.RawMessage `json:"kafka_connections"`
}

func echoSummaryOf(t *testing.T, res cliResult) echoSummary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	var s echoSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("summary line: %v", err)
	}
	return s
}

// checkEchoFacts checks the findings of a rewritten capture against the
// original's facts: the same batches, verdicts and offsets, every attempt
// of a finding sent to the one place want allows.
func checkEchoFacts(t *testing.T, what string, fs []cliFinding, want []echoFact) {
	t.Helper()
	if got := factsOf(fs); !factsEqual(got, want) {
		t.Errorf("%s: findings %+v, want the original's %+v", what, got, want)
	}
	for _, f := range fs {
		if len(f.Attempts) != 2 {
			t.Errorf("%s: finding %s has %d attempts, want the original's 2", what, f.BatchCRC, len(f.Attempts))
		}
	}
}

func factsEqual(a, b []echoFact) bool {
	return slices.EqualFunc(a, b, func(x, y echoFact) bool {
		return x.crc == y.crc && x.verdict == y.verdict && slices.Equal(x.offsets, y.offsets)
	})
}

// TestCaptureGivenTwice: a capture given twice, as is or with one copy 500
// ms late, gives the findings of one copy; the summary counts the requests
// of the second copy as seen on two connections, each counted once (where
// TCP reassembly did not already take the copy's packets for
// retransmissions of the first's: a copy with no skew of a connection that
// was still open). The sharded run says the same.
func TestCaptureGivenTwice(t *testing.T) {
	for _, c := range echoCaptures {
		path := seedPath(c.name)
		one := cliAnalyzeOK(t, path)
		checkEchoFacts(t, c.name+" once", one.Findings, c.facts)
		oneSum := echoSummaryOf(t, one)
		for _, args := range [][]string{
			{path, path},
			{"--clock-skew", "2=500ms", path, path},
			{"--clock-skew", "2=-300ms", path, path},
			{"--workers", "2", "--clock-skew", "2=500ms", path, path},
		} {
			t.Run(c.name+"/"+strings.Join(args[:len(args)-2], " "), func(t *testing.T) {
				res := cliAnalyzeOK(t, args...)
				checkEchoFacts(t, "given twice", res.Findings, c.facts)
				s := echoSummaryOf(t, res)
				// Every produce request decode read beyond one copy's is
				// the second copy's, and an echo.
				if want := s.ProduceRequests - oneSum.ProduceRequests; s.EchoedRequests != want {
					t.Errorf("%d requests echoed, want %d (%d read, one copy has %d)", s.EchoedRequests, want, s.ProduceRequests, oneSum.ProduceRequests)
				}
				for _, l := range s.EchoLegs {
					if l.FirstClient != l.SecondClient || l.FirstBroker != l.SecondBroker {
						t.Errorf("leg %+v: a copy of the capture has the same addresses", l)
					}
				}
				if len(res.Producers) != len(one.Producers) {
					t.Fatalf("%d producers, one copy has %d", len(res.Producers), len(one.Producers))
				}
				for i, p := range res.Producers {
					if q := one.Producers[i]; p.Requests != q.Requests || p.Batches != q.Batches || p.Resends != q.Resends {
						t.Errorf("producer %s: %d requests, %d batches, %d re-sends; one copy: %d, %d, %d",
							p.Client, p.Requests, p.Batches, p.Resends, q.Requests, q.Batches, q.Resends)
					}
				}
			})
		}
	}
	// With 500 ms of skew every connection of these captures ended before
	// its copy began: every request of the copy is an echo.
	path := seedPath("kgo-v13-nonidempotent-closed-after-append.pcap")
	one := echoSummaryOf(t, cliAnalyzeOK(t, path))
	if s := echoSummaryOf(t, cliAnalyzeOK(t, "--clock-skew", "2=500ms", path, path)); s.EchoedRequests != one.ProduceRequests || one.ProduceRequests == 0 {
		t.Errorf("%d requests echoed, want one copy's %d", s.EchoedRequests, one.ProduceRequests)
	}
}

// proxyAddr is the TCP proxy of the rewritten captures: it listens on
// 10.99.0.1:19092 and connects to the broker from 10.99.0.1, from the port
// the client used.
var proxyAddr = netip.MustParseAddrPort("10.99.0.1:19092")

// tcpPacket is one decoded TCP/IPv4 packet of a capture.
type tcpPacket struct {
	ci       gopacket.CaptureInfo
	eth      *layers.Ethernet
	ip       *layers.IPv4
	tcp      *layers.TCP
	fromPeer bool // sent by the broker
	client   netip.AddrPort
	broker   netip.AddrPort
}

// readTCP decodes every TCP packet of an Ethernet capture of IPv4, each
// with its connection's client and broker (the client sent the SYN); the
// others (UDP of the test host) are left out.
func readTCP(t *testing.T, path string) []tcpPacket {
	t.Helper()
	lt, raw := readPcap(t, path)
	if lt != layers.LinkTypeEthernet {
		t.Fatalf("%s: link type %v, want Ethernet", path, lt)
	}
	var out []tcpPacket
	clients := map[[2]netip.AddrPort]netip.AddrPort{} // by the ends in order: the client
	for _, r := range raw {
		pkt := gopacket.NewPacket(r.data, layers.LinkTypeEthernet, gopacket.Default)
		eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if eth == nil || ip == nil {
			t.Fatalf("%s: a packet that is not IPv4 over Ethernet", path)
		}
		if tcp == nil {
			continue // a UDP packet of the test host: no Kafka
		}
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip.SrcIP.To4())), uint16(tcp.SrcPort))
		dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip.DstIP.To4())), uint16(tcp.DstPort))
		ends := [2]netip.AddrPort{src, dst}
		if src.Compare(dst) > 0 {
			ends = [2]netip.AddrPort{dst, src}
		}
		if tcp.SYN && !tcp.ACK {
			clients[ends] = src
		}
		c, ok := clients[ends]
		if !ok {
			t.Fatalf("%s: a packet of %s-%s before its SYN", path, src, dst)
		}
		p := tcpPacket{ci: r.ci, eth: eth, ip: ip, tcp: tcp, fromPeer: src != c, client: c, broker: dst}
		if p.fromPeer {
			p.broker = src
		}
		out = append(out, p)
	}
	return out
}

// rewritten is p sent from src to dst at ts, with payload (nil: p's).
func rewritten(t *testing.T, p tcpPacket, src, dst netip.AddrPort, ts time.Time, payload []byte) rawPacket {
	t.Helper()
	eth, ip, tcp := *p.eth, *p.ip, *p.tcp
	s, d := src.Addr().As4(), dst.Addr().As4()
	ip.SrcIP, ip.DstIP = s[:], d[:]
	tcp.SrcPort, tcp.DstPort = layers.TCPPort(src.Port()), layers.TCPPort(dst.Port())
	if payload == nil {
		payload = tcp.Payload
	}
	if err := tcp.SetNetworkLayerForChecksum(&ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true},
		&eth, &ip, &tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	ci := p.ci
	ci.Timestamp = ts
	return rawPacket{ci: ci, data: slices.Clone(buf.Bytes())}
}

// writeNanoPcap writes an Ethernet pcap of nanosecond timestamps, the
// packets sorted by time (stable).
func writeNanoPcap(t *testing.T, path string, pkts []rawPacket) {
	t.Helper()
	slices.SortStableFunc(pkts, func(a, b rawPacket) int { return a.ci.Timestamp.Compare(b.ci.Timestamp) })
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		p.ci.CaptureLength, p.ci.Length = len(p.data), len(p.data)
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// proxyCapture writes the capture at path as a TCP proxy on the capture
// host would show it: each connection's packets on the client's leg (the
// client to proxyAddr) and on the proxy's (proxyAddr's host, from the
// client's port, to the broker), the same bytes on both; the leg named late
// comes 0.1 ms after the other.
func proxyCapture(t *testing.T, path, out string, clientLegLate bool) {
	t.Helper()
	const lag = 100 * time.Microsecond
	var pkts []rawPacket
	for _, p := range readTCP(t, path) {
		legB := netip.AddrPortFrom(proxyAddr.Addr(), p.client.Port())
		ta, tb := p.ci.Timestamp, p.ci.Timestamp.Add(lag)
		if clientLegLate {
			ta, tb = tb, p.ci.Timestamp
		}
		if p.fromPeer {
			pkts = append(pkts, rewritten(t, p, proxyAddr, p.client, ta, nil), rewritten(t, p, p.broker, legB, tb, nil))
		} else {
			pkts = append(pkts, rewritten(t, p, p.client, proxyAddr, ta, nil), rewritten(t, p, legB, p.broker, tb, nil))
		}
	}
	writeNanoPcap(t, out, pkts)
}

// TestProxyCapture: a capture rewritten into a TCP proxy's two legs gives
// the original's findings, whichever leg comes first; the summary counts
// every request once, seen on two connections, and names the legs.
func TestProxyCapture(t *testing.T) {
	dir := t.TempDir()
	for _, c := range echoCaptures {
		path := seedPath(c.name)
		one := cliAnalyzeOK(t, path)
		oneSum := echoSummaryOf(t, one)
		for _, late := range []string{"proxy leg late", "client leg late"} {
			t.Run(c.name+"/"+late, func(t *testing.T) {
				out := filepath.Join(dir, strings.ReplaceAll(late, " ", "-")+"-"+c.name)
				proxyCapture(t, path, out, late == "client leg late")
				for _, workers := range []string{"1", "2"} {
					res := cliAnalyzeOK(t, "--workers", workers, out)
					checkEchoFacts(t, "proxy", res.Findings, c.facts)
					s := echoSummaryOf(t, res)
					if s.EchoedRequests != oneSum.ProduceRequests || s.ProduceRequests != 2*oneSum.ProduceRequests {
						t.Errorf("%d of %d requests echoed, want %d of %d: each of the original's seen twice",
							s.EchoedRequests, s.ProduceRequests, oneSum.ProduceRequests, 2*oneSum.ProduceRequests)
					}
					if len(s.EchoLegs) == 0 {
						t.Fatal("no leg named")
					}
					for _, l := range s.EchoLegs {
						ends := []string{l.FirstClient, l.FirstBroker, l.SecondClient, l.SecondBroker}
						var viaProxy int
						for _, e := range ends {
							if strings.HasPrefix(e, proxyAddr.Addr().String()+":") {
								viaProxy++
							}
						}
						if viaProxy != 2 || l.FirstClient == l.SecondClient {
							t.Errorf("leg %+v: want one end of each connection the proxy's", l)
						}
					}
					var requests int64
					for _, p := range res.Producers {
						requests += p.Requests
					}
					var oneRequests int64
					for _, p := range one.Producers {
						oneRequests += p.Requests
					}
					if requests != oneRequests {
						t.Errorf("producers made %d requests, the original's %d: an echo counted", requests, oneRequests)
					}
				}
				var table bytes.Buffer
				if code := run([]string{"analyze", out}, nil, &table, &bytes.Buffer{}); code != exitOK {
					t.Fatalf("table run exited %d", code)
				}
				// The summary's row, and the proxy leg named in it (a
				// finding row names the proxy too, when its leg is kept).
				want := strconv.FormatInt(oneSum.ProduceRequests, 10) + " requests seen on two connections: proxy or NAT; counted once ("
				row := ""
				for _, line := range strings.Split(table.String(), "\n") {
					if strings.Contains(line, "capture duplicates") {
						row = line
					}
				}
				if !strings.Contains(row, want) || !strings.Contains(row, proxyAddr.String()) {
					t.Errorf("the summary's capture duplicates row %q does not count %q and name the proxy leg %s:\n%s", row, want, proxyAddr, table.String())
				}
			})
		}
	}
}

// TestProxyRecordLevel: the records a client re-sent in batches of other
// bytes are found through a proxy as without it.
func TestProxyRecordLevel(t *testing.T) {
	dir := t.TempDir()
	for _, c := range recordCaptures {
		path := seedPath(c.name)
		checkRecordFacts(t, c.name, cliAnalyzeOK(t, path), c.offsets, c.relation, c.crcs)
		for _, late := range []bool{false, true} {
			out := filepath.Join(dir, strconv.FormatBool(late)+"-"+c.name)
			proxyCapture(t, path, out, late)
			for _, args := range [][]string{{out}, {"--app-duplicates", out}, {"--workers", "2", out}} {
				res := cliAnalyzeOK(t, args...)
				checkRecordFacts(t, c.name+" via a proxy "+strings.Join(args[:len(args)-1], " "), res, c.offsets, c.relation, c.crcs)
				if s := echoSummaryOf(t, res); s.EchoedRequests == 0 || s.EchoedRequests*2 != s.ProduceRequests {
					t.Errorf("%d of %d requests echoed, want half", s.EchoedRequests, s.ProduceRequests)
				}
			}
		}
	}
}

// clusterCopy writes the capture at path as if its client had written the
// same to another cluster: every broker address moved to host, and, when
// id is set, the ClusterID "kfake" of its Metadata responses replaced by id
// (as long).
func clusterCopy(t *testing.T, path, out string, host netip.Addr, id string) {
	t.Helper()
	var pkts []rawPacket
	for _, p := range readTCP(t, path) {
		broker := netip.AddrPortFrom(host, p.broker.Port())
		payload := p.tcp.Payload
		if id != "" {
			if len(id) != len("kfake") {
				t.Fatalf("cluster ID %q: want 5 bytes", id)
			}
			payload = bytes.ReplaceAll(payload, []byte("kfake"), []byte(id))
		}
		if p.fromPeer {
			pkts = append(pkts, rewritten(t, p, broker, p.client, p.ci.Timestamp, payload))
		} else {
			pkts = append(pkts, rewritten(t, p, p.client, broker, p.ci.Timestamp, payload))
		}
	}
	writeNanoPcap(t, out, pkts)
}

// TestTwoClusters: the idempotent capture (kfake hands out producer ID 0)
// merged with a copy of itself written to another cluster 5 s later (the
// same client, producer ID, epoch and sequences, the same bytes): each
// cluster's re-sends are found, once each, and no finding spans the
// clusters, whether --cluster names them or the copy's Metadata responses
// carry another ClusterID.
func TestTwoClusters(t *testing.T) {
	const name = "kgo-v13-idempotent-timeout.pcap"
	facts := []echoFact{{"0x53638ffb", "deduplicated", []int64{1}}, {"0x7bb13e7f", "deduplicated", []int64{2}}}
	path := seedPath(name)
	pkts := readTCP(t, path)
	broker := pkts[0].broker
	other := netip.MustParseAddr("10.77.0.1")
	dir := t.TempDir()
	flagged := filepath.Join(dir, "flagged-"+name)
	clusterCopy(t, path, flagged, other, "")
	told := filepath.Join(dir, "told-"+name)
	clusterCopy(t, path, told, other, "kfak2")
	otherBroker := netip.AddrPortFrom(other, broker.Port()).String()
	for _, tc := range []struct {
		name     string
		args     []string
		clusters [2]string // of the original's findings, the copy's
	}{
		{"named by --cluster", []string{"--cluster", "one=" + broker.String(), "--cluster", "two=" + otherBroker, path, flagged}, [2]string{"one", "two"}},
		{"told by Metadata", []string{path, told}, [2]string{"kfake", "kfak2"}},
	} {
		for _, workers := range []string{"1", "2"} {
			t.Run(tc.name+"/workers "+workers, func(t *testing.T) {
				args := append([]string{"--workers", workers, "--clock-skew", "2=5s"}, tc.args...)
				res := cliAnalyzeOK(t, args...)
				byCluster := map[string][]cliFinding{}
				for _, f := range res.Findings {
					var c struct {
						Cluster string `json:"cluster"`
					}
					if err := json.Unmarshal([]byte(f.Raw), &c); err != nil {
						t.Fatal(err)
					}
					byCluster[c.Cluster] = append(byCluster[c.Cluster], f)
					for _, a := range f.Attempts[1:] {
						if a.Broker != f.Attempts[0].Broker {
							t.Errorf("finding %s of cluster %q spans brokers %s and %s", f.BatchCRC, c.Cluster, f.Attempts[0].Broker, a.Broker)
						}
					}
				}
				if len(byCluster) != 2 {
					t.Fatalf("findings of clusters %v, want %v", keysOf(byCluster), tc.clusters)
				}
				for i, c := range tc.clusters {
					fs := byCluster[c]
					checkEchoFacts(t, "cluster "+c, fs, facts)
					want := broker.String()
					if i == 1 {
						want = otherBroker
					}
					for _, f := range fs {
						if f.Broker != want {
							t.Errorf("finding %s of cluster %q at broker %s, want %s", f.BatchCRC, c, f.Broker, want)
						}
					}
				}
				if s := echoSummaryOf(t, res); s.EchoedRequests != 0 {
					t.Errorf("%d requests taken for capture duplicates: the copy is 5 s later, on another cluster", s.EchoedRequests)
				}
			})
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestClusterFlag: --cluster takes NAME=IP:PORT[,IP:PORT...], repeated; a
// host name, a missing name or an address named in two clusters is bad
// usage.
func TestClusterFlag(t *testing.T) {
	var f clusterFlag
	for _, s := range []string{"prod=10.0.0.1:9092,10.0.0.2:9092", "dr=[fd00::1]:9093", "prod=10.0.0.3:9092"} {
		if err := f.Set(s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
	if got, want := f.String(), "prod=10.0.0.1:9092,10.0.0.2:9092 dr=[fd00::1]:9093 prod=10.0.0.3:9092"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	for _, s := range []string{"prod", "=10.0.0.1:9092", "prod=", "prod=kafka-1:9092", "prod=10.0.0.1", "dr=10.0.0.2:9092"} {
		if err := f.Set(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	var out, errs bytes.Buffer
	if code := run([]string{"analyze", "--cluster", "prod=kafka-1:9092", seedPath("seed-idempotent-retry.pcap")}, nil, &out, &errs); code != exitUsage {
		t.Errorf("a host name: exit %d, want %d (%s)", code, exitUsage, errs.String())
	}
	// Named, a capture's only cluster is named on its findings.
	res := cliAnalyzeOK(t, "--cluster", "seed=172.19.0.4:19092", seedPath("seed-idempotent-retry.pcap"))
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Raw, `"cluster":"seed"`) {
		t.Errorf("findings %v, want one of cluster seed", rawLines(res.Findings))
	}
}
