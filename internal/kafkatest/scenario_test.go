package kafkatest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// fast is a producer whose produce requests carry a 300ms timeout.
func fast(idempotent bool) Producer {
	return Producer{Idempotent: idempotent, ProduceTimeout: 300 * time.Millisecond, TimeoutOverhead: 500 * time.Millisecond}
}

// TestRun checks the harness itself against the log: every fault it applies
// makes a real resend, and the log holds what the fault implies.
func TestRun(t *testing.T) {
	timedOut := []Fault{{Action: TimedOutAfterAppend, Every: 3, Max: 2}}
	tests := []struct {
		name     string
		s        Scenario
		events   int // faults the cluster must apply
		dupsPerE int // record values the log holds twice per fault
	}{
		{
			name:   "clean",
			s:      Scenario{Records: 6, Partitions: 2, Producer: fast(false)},
			events: 0,
		},
		{
			name:     "nonidempotent timed out",
			s:        Scenario{Records: 7, Partitions: 2, Faults: timedOut, Producer: fast(false)},
			events:   2,
			dupsPerE: 1,
		},
		{
			name:   "idempotent timed out",
			s:      Scenario{Records: 7, Partitions: 2, Faults: timedOut, Producer: fast(true)},
			events: 2,
		},
		{
			name: "topic filter by ID (produce v13)",
			s: Scenario{Records: 4, Producer: fast(false), Faults: []Fault{
				{Action: TimedOutAfterAppend, Topic: "other", Max: 5},
				{Action: TimedOutAfterAppend, Topic: "orders", Every: 2, Max: 1},
			}},
			events:   1,
			dupsPerE: 1,
		},
		{
			name:     "nonidempotent closed",
			s:        Scenario{Records: 5, Faults: []Fault{{Action: CloseAfterAppend, Every: 2, Max: 1}}, Producer: fast(false)},
			events:   1,
			dupsPerE: 1,
		},
		{
			name: "nonidempotent client timeout",
			s: Scenario{Records: 4, Faults: []Fault{{Action: Delay, Delay: 2 * time.Second, Every: 2, Max: 1}},
				Producer: Producer{ProduceTimeout: 100 * time.Millisecond, TimeoutOverhead: 200 * time.Millisecond}},
			events:   1,
			dupsPerE: 1,
		},
		{
			name:     "nonidempotent three-record requests",
			s:        Scenario{Records: 9, Faults: []Fault{{Action: TimedOutAfterAppend, Every: 2, Max: 1}}, Producer: Producer{ProduceTimeout: 300 * time.Millisecond, PerRequest: 3}},
			events:   1,
			dupsPerE: -1, // as many as the faulted batch held
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := tt.s
			s.Name, s.Topic = "t", "orders"
			res, err := Run(ctx, s, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Events) != tt.events {
				t.Fatalf("%d faults applied, want %d: %+v", len(res.Events), tt.events, res.Events)
			}
			for _, e := range res.Events {
				if e.Action != s.Faults[0].Action || len(e.Partitions) != 1 {
					t.Errorf("event %+v", e)
				}
			}
			checkLog(t, res, tt.events, tt.dupsPerE)
		})
	}
}

// checkLog checks that every value produced is in the log and that the log
// holds the expected number of values twice.
func checkLog(t *testing.T, res *Result, events, dupsPerEvent int) {
	t.Helper()
	held := make(map[string]int)
	for _, c := range res.Log.Copies() {
		held[c.Value] += len(c.Records)
		for _, r := range c.Records {
			pl, _ := res.Log.Partition(c.Partition)
			if _, ok := pl.BatchAt(r.BatchBaseOffset); !ok {
				t.Errorf("record %+v names batch %d, not in the log", r, r.BatchBaseOffset)
			}
		}
	}
	for _, v := range res.Values {
		if held[v] == 0 {
			t.Errorf("value %q not in the log", v)
		}
	}
	if len(held) != len(res.Values) {
		t.Errorf("log holds %d distinct values, produced %d", len(held), len(res.Values))
	}
	dups := res.Log.Duplicates()
	for _, d := range dups {
		if len(d.Records) != 2 {
			t.Errorf("value %q held %d times, want 2", d.Value, len(d.Records))
		}
	}
	switch {
	case dupsPerEvent >= 0 && len(dups) != events*dupsPerEvent:
		t.Errorf("log holds %d values twice, want %d: %+v", len(dups), events*dupsPerEvent, dups)
	case dupsPerEvent < 0 && len(dups) == 0:
		t.Errorf("log holds no value twice, want the faulted batch's")
	}
}

func TestCaptureScenario(t *testing.T) {
	testenv.Capture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pcap := filepath.Join(t.TempDir(), "run.pcap")
	s := Scenario{Name: "c", Topic: "orders", Records: 4, Producer: fast(false),
		Faults: []Fault{{Action: TimedOutAfterAppend, Every: 2, Max: 1}}}
	res, err := Run(ctx, s, pcap)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pcap != pcap || res.Stats.Captured == 0 || res.Stats.DroppedByKernel != 0 {
		t.Fatalf("capture %q stats %+v", res.Pcap, res.Stats)
	}
	b, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 || string(b[:4]) != "\xd4\xc3\xb2\xa1" && string(b[:4]) != "\xa1\xb2\xc3\xd4" {
		t.Fatalf("%s is not a pcap file (%d bytes)", pcap, len(b))
	}
	checkLog(t, res, 1, 1)
}

func TestKcatScenario(t *testing.T) {
	testenv.Tool(t, "kcat")
	tests := []struct {
		name       string
		idempotent string
		dups       int
	}{
		{name: "nonidempotent", idempotent: "false", dups: 2},
		{name: "idempotent", idempotent: "true", dups: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := Scenario{Name: "k", Topic: "orders", Records: 6,
				Faults:  []Fault{{Action: TimedOutAfterAppend, Every: 3, Max: 2}},
				Produce: KcatProduce("enable.idempotence="+tt.idempotent, "request.timeout.ms=300", "message.timeout.ms=15000")}
			res, err := Run(ctx, s, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Events) != 2 {
				t.Fatalf("%d faults applied, want 2", len(res.Events))
			}
			checkLog(t, res, 2, tt.dups/2)
		})
	}
}

func TestSetFaultsInvalid(t *testing.T) {
	tests := []struct {
		name string
		f    Fault
	}{
		{name: "no action", f: Fault{Max: 1}},
		{name: "no max", f: Fault{Action: TimedOutAfterAppend}},
		{name: "negative every", f: Fault{Action: CloseAfterAppend, Max: 1, Every: -1}},
		{name: "delay without duration", f: Fault{Action: Delay, Max: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.f.validate(); err == nil {
				t.Fatalf("fault %+v accepted", tt.f)
			}
		})
	}
}
