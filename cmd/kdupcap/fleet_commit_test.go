package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/fleet"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

// synthFleet are the attempts of four non-idempotent producers, every 200
// ms for 20 s of capture time, as two hosts publish them: every batch goes
// to broker a (host-a); every seventh is answered REQUEST_TIMED_OUT after
// its append and sent again 60 ms later to broker b (host-b), where it is
// appended again: a duplicate only the fleet sees. One more batch is sent
// at 9.95 s and again at 10.05 s: its two attempts straddle the run's
// halves. Each event is its host's and the capture time it is handed
// over; dups names the re-sent batches by their CRC.
type synthEvent struct {
	host int
	at   time.Time
	x    *decode.Exchange
}

func synthFleet(t0 time.Time) (evs []synthEvent, dups []string) {
	brokers := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:9092"), netip.MustParseAddrPort("10.0.0.2:9092")}
	var conns [2][4]*decode.ConnInfo
	for h := range conns {
		for i := range conns[h] {
			client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i + 1)}), uint16(40000+1000*h+i))
			conns[h][i] = &decode.ConnInfo{ID: uint64(i + 1), Client: client, Broker: brokers[h], DetectedBy: "port", FirstSeen: t0}
		}
	}
	ids := []string{"app-0", "app-1", "app-2", "app-3"}
	offset := int64(0)
	send := func(h, i int, corr int32, sent time.Time, crc uint32, code int16) {
		offset++
		b := decode.Batch{Topic: "orders", Partition: int32(i), Magic: 2, CRC: crc, Hash: uint64(crc) * 0x9e3779b97f4a7c15,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Length: 80,
			Response: &decode.PartitionResponse{ErrorCode: code, BaseOffset: offset, LogAppendTime: -1}}
		x := &decode.Exchange{Conn: conns[h][i], ClientID: &ids[i], CorrelationID: corr, Version: 9, Acks: -1, TimeoutMillis: 30000,
			RequestTime: sent, Responded: true, ResponseTime: sent.Add(2 * time.Millisecond), Batches: []decode.Batch{b}}
		evs = append(evs, synthEvent{host: h, at: x.ResponseTime, x: x})
	}
	for k := range 100 {
		for i := range 4 {
			sent := t0.Add(time.Duration(k)*200*time.Millisecond + time.Duration(i)*10*time.Millisecond)
			crc := uint32(k<<8|i) * 2654435761
			if k%7 != 3 {
				send(0, i, int32(k), sent, crc, 0)
				continue
			}
			send(0, i, int32(k), sent, crc, 7)
			send(1, i, int32(k), sent.Add(60*time.Millisecond), crc, 0)
			dups = append(dups, fmt.Sprintf("0x%08x", crc))
		}
	}
	const straddle = 0xdead0001
	send(0, 0, 1000, t0.Add(9950*time.Millisecond), straddle, 7)
	send(1, 0, 1000, t0.Add(10050*time.Millisecond), straddle, 0)
	dups = append(dups, fmt.Sprintf("0x%08x", uint32(straddle)))
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	slices.Sort(dups)
	return evs, dups
}

// publishSynth hands evs to one publisher per host and waits until the
// cluster has them all.
func publishSynth(t *testing.T, pubs []*fleet.Publisher, evs []synthEvent) {
	t.Helper()
	for _, e := range evs {
		pubs[e.host].Exchange(e.x)
	}
	if !waitFor(10*time.Second, func() bool {
		for _, p := range pubs {
			if s := p.Stats(); s.Delivered != s.Records {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the attempts were not all delivered: %+v, %+v", pubs[0].Stats(), pubs[1].Stats())
	}
}

// committedOffsets returns the offsets group committed on topic, by
// partition.
func committedOffsets(t *testing.T, addr, group, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, g := range resp.Groups {
		for _, tp := range g.Topics {
			for _, p := range tp.Partitions {
				if tp.Topic == topic && p.Offset >= 0 {
					out[p.Partition] = p.Offset
				}
			}
		}
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if tp.Topic == topic && p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out
}

// TestFleetCommits: correlate commits only the offsets of attempts older
// than its --window (2s) before the capture time it reached, and a second
// instance of the group, started after the first stopped, reads again from
// there: it finds the re-send whose first attempt the first instance read
// and whose retry came after it stopped, and between them the two report
// every duplicate, none under two IDs.
func TestFleetCommits(t *testing.T) {
	t.Parallel()
	const topic, group = "kdupcap-attempts", "commits"
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	addr := cl.ListenAddrs()[0]
	url := "kafka://" + addr + "/" + topic
	t0 := time.Unix(1760000000, 0)
	evs, dups := synthFleet(t0)
	half := slices.IndexFunc(evs, func(e synthEvent) bool { return !e.at.Before(t0.Add(10 * time.Second)) })
	var pubs []*fleet.Publisher
	for h := range 2 {
		p, err := fleet.NewPublisher(fleet.PublisherOptions{Seeds: []string{addr}, Topic: topic,
			Encoder: fleet.EncoderOptions{Host: fmt.Sprintf("host-%c", 'a'+h), Run: uint64(h + 1)}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		pubs = append(pubs, p)
	}

	// The first half, and the first instance on it.
	publishSynth(t, pubs, evs[:half])
	args := []string{"--from", url, "--group", group, "--window", "2s", "--settle", "1s", "--exit-idle", "1500ms", "--duration", "30s"}
	out1, stderr1, code := correlateOut(t, context.Background(), args...)
	if code != exitOK {
		t.Fatalf("first correlate: exit %d: %s", code, stderr1)
	}
	// What it must have committed: per partition, the first record not
	// older than 2s before the newest capture time it read.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := kafkatest.ReadBack(ctx, addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	var newest time.Time
	ats := map[int32][]time.Time{}
	for _, p := range log.Partitions {
		for _, r := range p.Records {
			rec, err := fleet.Decode([]byte(r.Value))
			if err != nil {
				t.Fatal(err)
			}
			ats[p.Partition] = append(ats[p.Partition], rec.At)
			if rec.At.After(newest) {
				newest = rec.At
			}
		}
	}
	want, total := map[int32]int64{}, 0
	cutoff := newest.Add(-2 * time.Second)
	for p, ts := range ats {
		total += len(ts)
		i := slices.IndexFunc(ts, func(at time.Time) bool { return !at.Before(cutoff) })
		if i < 0 {
			i = len(ts)
		}
		want[p] = int64(i) // the log starts at offset 0
	}
	got := committedOffsets(t, addr, group, topic)
	if !maps2Equal(got, want) {
		t.Errorf("committed %v, want %v: the first record of each partition not older than %s (2s before %s)",
			got, want, cutoff.UTC().Format(time.RFC3339Nano), newest.UTC().Format(time.RFC3339Nano))
	}
	reread := 0
	for p, off := range want {
		reread += len(ats[p]) - int(off)
	}
	if reread == 0 || reread == total {
		t.Fatalf("harness: the second instance would read again %d of %d records", reread, total)
	}

	// The second half; the second instance takes the partitions over.
	publishSynth(t, pubs, evs[half:])
	out2, stderr2, code := correlateOut(t, context.Background(), args...)
	if code != exitOK {
		t.Fatalf("second correlate: exit %d: %s", code, stderr2)
	}
	second := 0
	for _, p := range pubs {
		second += int(p.Stats().Records)
	}
	second -= total
	if want := fmt.Sprintf(`"records":%d,`, reread+second); !strings.Contains(out2, want) {
		t.Errorf("second instance's summary: want %s (the %d records from the commits on, and the %d published since): %s",
			want, reread, second, out2)
	}

	f1, f2 := findingLines(t, out1, true), findingLines(t, out2, true)
	ids := map[string]string{} // CRC -> ID
	var found []string
	for _, f := range append(f1, f2...) {
		if id, ok := ids[f.BatchCRC]; ok && id != f.ID {
			t.Errorf("batch %s reported with IDs %s and %s", f.BatchCRC, id, f.ID)
		}
		if f.Verdict != "duplicated" || f.Scope != "fleet" {
			t.Errorf("batch %s: %s, scope %s, want duplicated, fleet", f.BatchCRC, f.Verdict, f.Scope)
		}
		if _, ok := ids[f.BatchCRC]; !ok {
			found = append(found, f.BatchCRC)
		}
		ids[f.BatchCRC] = f.ID
	}
	slices.Sort(found)
	if !slices.Equal(found, dups) {
		t.Errorf("found %d duplicates, want %d:\nfound %v\nwant  %v", len(found), len(dups), found, dups)
	}
	straddle := fmt.Sprintf("0x%08x", uint32(0xdead0001))
	if !slices.ContainsFunc(f2, func(f fleetFinding) bool { return f.BatchCRC == straddle }) {
		t.Errorf("the second instance did not find the re-send whose first attempt came before the first stopped")
	}
	t.Logf("first instance: %d findings; committed %v; second: %d findings, %d records read again", len(f1), got, len(f2), reread)
}

func maps2Equal(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
