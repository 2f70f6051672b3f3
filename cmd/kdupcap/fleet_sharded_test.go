package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/fleet"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

// publishedAttempts reads topic back from the cluster at addr and returns
// every attempt record decoded, as text, sorted, with what differs between
// two runs of one capture left out: the publisher's run (random) and the
// record's place in its stream (a sharded run may hand events over in
// another order within an epoch). kinds counts the records by kind, and
// under kindPrints the batches that carry record prints.
func publishedAttempts(t *testing.T, addr, topic string) (recs []string, kinds map[fleet.Kind]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	log, err := kafkatest.ReadBack(ctx, addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	kinds = map[fleet.Kind]int{}
	for _, p := range log.Partitions {
		for _, r := range p.Records {
			rec, err := fleet.Decode([]byte(r.Value))
			if err != nil {
				t.Fatalf("%s/%d: %v", topic, p.Partition, err)
			}
			kinds[rec.Kind]++
			rec.Run, rec.Seq = 0, 0
			var prints []string
			if x := rec.Exchange; x != nil {
				for _, b := range x.Batches {
					if len(b.RecordPrints()) > 0 {
						kinds[kindPrints]++
					}
					prints = append(prints, fmt.Sprint(b.RecordPrints()))
				}
			}
			j, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, fmt.Sprintf("key %q %s prints %v", r.Key, j, prints))
		}
	}
	slices.Sort(recs)
	return recs, kinds
}

// kindPrints counts, in publishedAttempts' kinds, the batches published
// with their record prints.
const kindPrints fleet.Kind = 255

// checkShardedAttempts: analyze --attempts with --workers 2 (sharded)
// publishes the same records as with one worker: the same attempts,
// connection ends and transaction records, the same keys, connection IDs,
// capture times and record prints, in any order.
func checkShardedAttempts(t *testing.T, args ...string) map[fleet.Kind]int {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "w1", "w2"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	addr := cl.ListenAddrs()[0]
	var got [2][]string
	var kinds map[fleet.Kind]int
	for i, w := range []string{"1", "2"} {
		res := cliAnalyze(t, nil, append([]string{"--workers", w, "--attempts", "kafka://" + addr + "/w" + w, "--host", "h"}, args...)...)
		if res.Code != exitOK {
			t.Fatalf("analyze --workers %s --attempts: exit %d: %s", w, res.Code, res.Stderr)
		}
		got[i], kinds = publishedAttempts(t, addr, "w"+w)
	}
	if len(got[0]) == 0 {
		t.Fatalf("no attempt published")
	}
	if !slices.Equal(got[1], got[0]) {
		only := func(a, b []string) []string {
			var out []string
			for _, s := range a {
				if !slices.Contains(b, s) {
					out = append(out, s)
				}
			}
			return out
		}
		t.Errorf("--workers 2 published %d records, 1 worker %d:\nonly with 2:\n  %s\nonly with 1:\n  %s", len(got[1]), len(got[0]),
			strings.Join(only(got[1], got[0]), "\n  "), strings.Join(only(got[0], got[1]), "\n  "))
	}
	return kinds
}

// TestFleetAttemptsSharded: checkShardedAttempts on committed real
// captures (re-sends on one connection and across connections, rebatched
// records, an idempotent epoch bump), with and without records.
func TestFleetAttemptsSharded(t *testing.T) {
	for _, tt := range []struct {
		file   string
		args   []string
		prints bool // some batches carry their record prints
	}{
		{"kgo-v13-nonidempotent-closed-after-append.pcap", nil, true},
		{"sarama-nonidempotent-rebatched.pcap", []string{"--records", "2"}, true},
		{"rdkafka211-idempotent-epoch-bump.pcap", []string{"--app-duplicates"}, true},
		{"kgo-v13-idempotent-timeout.pcap", []string{"--record-match=false"}, false},
	} {
		t.Run(tt.file, func(t *testing.T) {
			kinds := checkShardedAttempts(t, append(tt.args, filepath.Join("..", "..", "testdata", tt.file))...)
			if kinds[fleet.KindAttempt] == 0 || kinds[fleet.KindConnEnd] == 0 || (kinds[kindPrints] > 0) != tt.prints {
				t.Errorf("records by kind %v (255: batches with prints): want attempts, connection ends, prints %v", kinds, tt.prints)
			}
			t.Logf("records by kind: %v", kinds)
		})
	}
}
