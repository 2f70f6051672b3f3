package pipeline

import (
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/decode"
	"github.com/kdupcap/kdupcap/detect"
)

// Options configure the stages of a run, analyze and live alike. A zero
// field takes the default of the package that owns it.
type Options struct {
	// Ports are the broker ports (nil: decode.DefaultPort); Sniff also
	// takes connections on other ports whose bytes parse as Kafka.
	Ports []uint16
	Sniff bool
	// Window is how long (capture time) a batch is remembered after its
	// last attempt (0: detect.DefaultWindow); MaxBatches bounds the
	// batches remembered (0: detect.DefaultMaxBatches).
	Window     time.Duration
	MaxBatches int
	// IdleTimeout closes a connection idle this long (capture time) and
	// gives up its buffered segments (0: capture.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ReorderWindow is how long (capture time) a hole the peer
	// acknowledged is held open for a reordered segment (0:
	// capture.DefaultReorderWindow; negative: given up at once).
	ReorderWindow time.Duration
	// Scope chooses the re-sends detect looks for ("": detect's default).
	Scope detect.Scope
	// Records is how many records of each batch decode reads for the
	// findings; 0 reads none.
	Records int
	// RecordMatch fingerprints the records of producers that are not
	// idempotent near a failed attempt, to find records re-sent in
	// rebuilt or re-batched batches; AppDuplicates matches every record,
	// to find the records the application produced twice.
	RecordMatch   bool
	AppDuplicates bool
	// Workers, for an Analysis: the goroutines that reassemble and decode,
	// the connections spread over them by their addresses (1: the reading
	// goroutine does all; 0: AutoWorkers, and when that is 1 and a second
	// CPU is usable, decode and detect on a second goroutine (single.go's
	// split) when the input is large enough: Analysis.Read). The findings
	// are the same for any number. Live runs use one.
	Workers int
	// TLSKeyLogs are NSS key log files (SSLKEYLOGFILE) with the secrets of
	// TLS connections the capture holds; the secrets blocks of a pcapng
	// capture are read with no file named. A Live run follows the files as
	// they grow.
	TLSKeyLogs []string
	// Observe, if set, sees every produce exchange before detect does, in
	// capture order, for as long as the call lasts (decode.Sink's rules),
	// but the copies of a request already seen on another connection (a
	// proxy's other leg, NAT, a capture given twice: detect.Detector.Echo),
	// which detect folds into the first.
	Observe func(*decode.Exchange)
	// Attempts, if set, sees every produce exchange and connection end
	// before detect, copies of one request included (--attempts: a
	// fleet.Publisher; attempts.go).
	Attempts AttemptSink
	// Clusters names the clusters of broker addresses where the capture
	// cannot tell (the --cluster flag): attempts to two clusters never
	// make one finding (decode.Options.Clusters).
	Clusters []decode.Cluster
	// MaxFrameBytes bounds the frames decoded whole (--max-frame-bytes;
	// 0: decode.DefaultMaxHeldFrameBytes): a larger one is passed over but
	// for its header, counted (decode.Options.MaxHeldFrameBytes).
	MaxFrameBytes int32
	// MaxConnections bounds the TCP connections held at once
	// (--max-connections; 0: capture.DefaultMaxConnections), shared out
	// among workers: beyond it the least recently active are closed early,
	// counted (capture.AssemblerOptions.MaxConnections).
	MaxConnections int
	// DecompressBudget bounds the bytes the run decompresses for records
	// and record prints (0: decode.DefaultMaxDecompressedTotal); the
	// batches after it is spent are left compressed, counted. The CLI sets
	// it from the size of the capture files (--decompress-budget).
	DecompressBudget int64
}

// Bounds and defaults of Options that no stage owns.
const (
	// MaxWorkers bounds Options.Workers, and defaultMaxWorkers what
	// AutoWorkers chooses: one reader feeds them all, so a few saturate
	// it, and each holds its batches and reassembly buffers.
	MaxWorkers        = 64
	defaultMaxWorkers = 8
	// MaxRecords bounds Options.Records: a finding is read by a person.
	MaxRecords = 1000
	// maxListedConnections bounds the Kafka connections an analysis lists
	// in its summary (over its Decoders); the others are counted
	// (report.Summary.KafkaConnectionsOmitted). 200,000 connections would
	// otherwise cost 60 MB of memory and a summary line as large.
	maxListedConnections = 10000
)

// Check says what is wrong with o, if anything, naming the CLI flag of
// each field.
func (o *Options) Check() error {
	switch {
	case o.Window < 0 || o.IdleTimeout < 0:
		return fmt.Errorf("--window and --idle-timeout must be positive")
	case o.Records < 0 || o.Records > MaxRecords:
		return fmt.Errorf("--records %d: want 0 to %d", o.Records, MaxRecords)
	case o.Workers < 0 || o.Workers > MaxWorkers:
		return fmt.Errorf("--workers %d: want 1 to %d, or 0 to choose", o.Workers, MaxWorkers)
	case o.MaxConnections < 0:
		return fmt.Errorf("--max-connections %d: want a positive number", o.MaxConnections)
	case o.MaxFrameBytes < 0 || o.MaxFrameBytes > decode.DefaultMaxFrameBytes:
		return fmt.Errorf("--max-frame-bytes %d: want 1 to %d", o.MaxFrameBytes, decode.DefaultMaxFrameBytes)
	}
	named := map[netip.AddrPort]string{}
	for _, c := range o.Clusters {
		if c.Name == "" || len(c.Brokers) == 0 {
			return fmt.Errorf("--cluster: want NAME=HOST:PORT[,HOST:PORT...]")
		}
		for _, a := range c.Brokers {
			if n, ok := named[a]; ok && n != c.Name {
				return fmt.Errorf("--cluster: %s named in clusters %q and %q", a, n, c.Name)
			}
			named[a] = c.Name
		}
	}
	return nil
}

// AutoWorkers is what Options.Workers 0 chooses. Measured on 2 cores,
// sharding pays when decoding dominates (Records: 1.5x faster;
// AppDuplicates decompresses every batch) but not on a plain analysis,
// where reading and detection, which one goroutine does, and the garbage
// collector take most of the time (within 10% either way); so it shards
// only with records to decode; one worker then runs split (reading and
// reassembly on one goroutine, decode and detect on another), 1.1 to 1.5x
// one goroutine on real captures of 500 MB and more, when the input is of
// splitMinBytes or more (Analysis.Read).
func AutoWorkers(records int, appDuplicates bool) int {
	if records > 0 || appDuplicates {
		return min(runtime.GOMAXPROCS(0), defaultMaxWorkers)
	}
	return 1
}

// workers is the number of workers o asks for.
func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return AutoWorkers(o.Records, o.AppDuplicates)
}

// detectOptions are the Detector's options for o; live runs add their own.
func (o *Options) detectOptions() detect.Options {
	return detect.Options{Window: o.Window, Scope: o.Scope, AllRecords: o.AppDuplicates, MaxBatches: o.MaxBatches}
}

// decodeOptions are the options of each of n Decoders for o: the bounds
// over a run are shared out among them, each keeping room for one frame
// held whole.
func (o *Options) decodeOptions(n int) decode.Options {
	held := int64(o.MaxFrameBytes)
	if held == 0 {
		held = decode.DefaultMaxHeldFrameBytes
	}
	budget := o.DecompressBudget
	if budget == 0 {
		budget = decode.DefaultMaxDecompressedTotal
	}
	return decode.Options{Ports: o.Ports, Sniff: o.Sniff, Records: o.Records, RecordPrints: o.RecordMatch || o.AppDuplicates, Clusters: o.Clusters,
		MaxConnections:        max(maxListedConnections/n, 1),
		MaxPrintBytes:         decode.DefaultMaxPrintBytes / n,
		MaxHeldFrameBytes:     o.MaxFrameBytes,
		MaxBufferedFrameBytes: max(decode.DefaultMaxBufferedFrameBytes/int64(n), held),
		MaxDecompressedTotal:  max(budget/int64(n), 1)}
}

// assemblerOptions are the options of each of n Assemblers for o.
func (o *Options) assemblerOptions(n int) capture.AssemblerOptions {
	conns := o.MaxConnections
	if conns == 0 {
		conns = capture.DefaultMaxConnections
	}
	return capture.AssemblerOptions{IdleTimeout: o.IdleTimeout, ReorderWindow: o.ReorderWindow,
		MaxConnections: max(conns/n, 1)}
}
