package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
	"github.com/kdupcap/kdupcap/pipeline"
)

// The flags analyze and live share, and the process settings of the CLI.

// parseScope reads --scope: connection, client or both.
func parseScope(s string) (detect.Scope, error) {
	switch s {
	case "connection":
		return detect.ScopeConnection, nil
	case "client":
		return detect.ScopeClient, nil
	case "both":
		return detect.ScopeBoth, nil
	}
	return "", fmt.Errorf("--scope %q: want connection, client or both", s)
}

// verdictWords are the verdicts, as --verdict takes them.
func verdictWords() []string {
	var words []string
	for _, v := range detect.Verdicts() {
		words = append(words, string(v))
	}
	return words
}

// recordsUsage is the help text of --records.
const recordsUsage = "show the first `N` records of each finding's batch (offset, timestamp, key, value, headers), decompressing it if need be; 0: none"

// maxBatchesUsage is the help text of --max-batches.
const maxBatchesUsage = "the most batches remembered at once (about 400 bytes of memory each, indexes and queues included); beyond it the batch touched least recently is decided early (counted as evicted) and a later re-send of it is not matched"

// memoryLimit is the Go runtime's soft memory limit the CLI sets unless
// GOMEMLIMIT says otherwise, and gcPercent its GOGC unless GOGC does: the
// heap the default bounds allow (the detector's batches, record prints,
// reassembly buffers) stays well below the limit, and collecting at half
// the live heap again, not the whole, keeps the peak close to what is
// live (the collector costs about 2% of the CPU time either way).
const (
	memoryLimit = 208 << 20
	gcPercent   = 50
)

// setMemoryLimit applies memoryLimit and gcPercent where the environment
// does not set them.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// maxFrameUsage is the help text of --max-frame-bytes.
var maxFrameUsage = fmt.Sprintf("a Kafka frame over `SIZE` (default %dMiB; at most the broker's 100MiB) is passed over but for its header, counted, a re-send inside it not seen; raising it costs up to SIZE of memory per frame in flight", decode.DefaultMaxHeldFrameBytes>>20)

// recordMatchUsage is the help text of --record-match.
const recordMatchUsage = "match the records (key, value, headers) of failed or unanswered attempts, and of the batches after them, to find retries that rebuilt or re-batched the records (segmentio/kafka-go, sarama, librdkafka) or that an idempotent producer sent again under a new epoch or producer ID"

// appDuplicatesUsage is the help text of --app-duplicates.
const appDuplicatesUsage = "match every record, to find records the application produced twice with every attempt answered with success (record_duplicate); decompresses every such batch"

// workersUsage is the help text of --workers.
const workersUsage = "reassemble and decode connections on `N` goroutines, spread by their addresses, beside the one reading (1: one goroutine does all); the output is the same for any N. 0 chooses: the CPUs usable (at most 8) with --records or --app-duplicates, else 1, with decode and detect on a second goroutine when a second CPU is usable and the input holds 256 MiB or more: files by their sizes (standard input redirected from a file too), standard input from a pipe counted as large, --max-input-bytes below that as small (below that, the split's start costs more than it gains)"

// scopeUsage is the help text of --scope.
const scopeUsage = "which re-sends to find: connection (on one connection), client (across connections of one client: same IP and client.id, or same producer ID and epoch), or both"

// tlsKeyLogUsage is the help text of --tls-keylog.
const tlsKeyLogUsage = "an NSS key log `FILE` (SSLKEYLOGFILE; CLIENT_RANDOM and the TLS 1.3 secrets) to decrypt TLS connections with; repeat for more files. A pcapng's own Decryption Secrets Blocks are read with no flag"

// filesFlag collects a repeated flag's file names.
type filesFlag []string

func (f *filesFlag) String() string { return strings.Join(*f, ",") }

func (f *filesFlag) Set(s string) error {
	if s == "" {
		return fmt.Errorf("empty file name")
	}
	*f = append(*f, s)
	return nil
}

// stageUsage is what the shared flags' help says differently for analyze
// and live.
type stageUsage struct {
	port, window, idle, recordsMore, keylogMore string
}

// stageFlags are the flags of pipeline.Options that analyze and live
// share, registered on one FlagSet; check completes them after Parse.
type stageFlags struct {
	o            *pipeline.Options
	ports, scope *string
}

func addStageFlags(fs *flag.FlagSet, o *pipeline.Options, u stageUsage) *stageFlags {
	sf := &stageFlags{o: o}
	sf.ports = fs.String("port", "9092", u.port)
	durationVar(fs, &o.Window, "window", detect.DefaultWindow, time.Nanosecond, u.window)
	intVar(fs, &o.MaxBatches, "max-batches", detect.DefaultMaxBatches, 1, math.MaxInt, maxBatchesUsage)
	durationVar(fs, &o.IdleTimeout, "idle-timeout", capture.DefaultIdleTimeout, time.Nanosecond, u.idle)
	sf.scope = new(string)
	choiceVar(fs, sf.scope, "scope", "both", []string{"connection", "client", "both"}, scopeUsage)
	intVar(fs, &o.Records, "records", 0, 0, pipeline.MaxRecords, recordsUsage+u.recordsMore)
	fs.BoolVar(&o.RecordMatch, "record-match", true, recordMatchUsage)
	fs.BoolVar(&o.AppDuplicates, "app-duplicates", false, appDuplicatesUsage)
	fs.Var((*filesFlag)(&o.TLSKeyLogs), "tls-keylog", tlsKeyLogUsage+u.keylogMore)
	fs.Var((*clusterFlag)(&o.Clusters), "cluster", clusterUsage)
	intVar(fs, &o.MaxConnections, "max-connections", capture.DefaultMaxConnections, 1, math.MaxInt, "the most TCP connections held at once (some 2 KB each); beyond it the quarter least recently active are closed early, counted, their unanswered requests ending as evicted")
	fs.Func("max-frame-bytes", maxFrameUsage, func(s string) error {
		n, err := parseSize(s)
		if err != nil || n < 1 || n > decode.DefaultMaxFrameBytes {
			return fmt.Errorf("%q: want a size from 1 to 100MiB", s)
		}
		o.MaxFrameBytes = int32(n)
		return nil
	})
	return sf
}

// check parses and checks the shared flags' values into the Options.
func (sf *stageFlags) check() error {
	var err error
	if sf.o.Ports, err = parsePorts(*sf.ports); err != nil {
		return err
	}
	if sf.o.Scope, err = parseScope(*sf.scope); err != nil {
		return err
	}
	return sf.o.Check()
}
