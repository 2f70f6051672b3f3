// Command realcap writes a capture of real client traffic for kdupcap's
// benchmarks: kgo producers writing to an in-process kfake broker, captured
// by tcpdump on loopback (kafkatest.BulkCapture), with its manifest
// (FILE.manifest.json: the re-sends the broker's log shows, the packets, the
// broker's port), and with -eth its re-cut to 1500-byte IP packets
// (kafkatest.Recut) with a manifest of its own, and with -ng the capture as
// pcapng, the format dumpcap and Wireshark write (kafkatest.ToPcapng), its
// manifest too. It needs tcpdump and root.
//
//	realcap -o real-lo.pcap -size 1GB [-eth real-eth.pcap] [-ng real-lo.pcapng] [-producers 4] [-burst 1000] [-seed 1]
//
// Each producer flushes -burst records at a time, so that the requests'
// sizes do not depend on the machine's load. The capture is still not
// reproducible byte for byte (timing decides the segments, the
// interleaving of connections and which requests are faulted): the
// manifest is derived from each run's own log.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kdupcap/kdupcap/internal/gencap"
	"github.com/kdupcap/kdupcap/internal/kafkatest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output streams; it returns the
// exit code: 0 done, 2 usage, 1 failure.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("realcap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := kafkatest.DefaultBulk
	out := fs.String("o", "", "capture file to write (required)")
	eth := fs.String("eth", "", "also write the capture re-cut to 1500-byte IP packets to this file")
	ng := fs.String("ng", "", "also write the capture as pcapng to this file")
	size := fs.String("size", "100MB", "capture size: bytes or with a B, KB, MB, GB suffix (powers of 1024)")
	producers := fs.Int("producers", d.Producers, "kgo producers at once (the odd ones idempotent)")
	recordBytes := fs.Int("record-bytes", d.RecordBytes, "mean record value size")
	faults := fs.Int("faults", d.Faults, "produce requests answered REQUEST_TIMED_OUT after the append")
	every := fs.Int("every", d.Every, "fault every N-th produce request of a connection")
	seed := fs.Uint64("seed", d.Seed, "seed of the keys and values")
	rate := fs.Int64("rate", d.Rate, "bytes per second the producers write together")
	burst := fs.Int("burst", d.Burst, "records a producer flushes at once: one request each, whatever the machine's load")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "realcap: usage: realcap -o FILE [-size 100MB] [-eth FILE] [-ng FILE]")
		return 2
	}
	n, err := gencap.ParseSize(*size)
	if err != nil {
		fmt.Fprintf(stderr, "realcap: -size: %v\n", err)
		return 2
	}
	b := kafkatest.Bulk{Bytes: n, Producers: *producers, RecordBytes: *recordBytes, Faults: *faults, Every: *every, Rate: *rate, Burst: *burst, Seed: *seed, Log: stderr}
	if err := write(*out, *eth, *ng, b, stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// write captures into out (re-cuts it into eth and copies it as pcapng into
// ng, unless ""), each with its manifest, printing the manifests' paths.
// The captures are written to temporary files renamed once complete.
func write(out, eth, ng string, b kafkatest.Bulk, stdout io.Writer) error {
	if err := kafkatest.CanCapture(); err != nil {
		return err
	}
	tmp := out + ".tmp"
	defer os.Remove(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res, err := kafkatest.BulkCapture(ctx, tmp, b)
	if err != nil {
		return err
	}
	packets, err := countPackets(tmp)
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("realcap: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("realcap: %w", err)
	}
	m := manifest(res, 65535, packets, out)
	if err := writeManifest(out, m, stdout); err != nil {
		return err
	}
	if ng != "" {
		n, err := convert(out, ng, kafkatest.ToPcapng)
		if err != nil {
			return err
		}
		if err := writeManifest(ng, manifest(res, 65535, n, ng), stdout); err != nil {
			return err
		}
	}
	if eth == "" {
		return nil
	}
	packets, err = convert(out, eth, func(dst io.Writer, src io.Reader) (int64, error) { return kafkatest.Recut(dst, src, 1500) })
	if err != nil {
		return err
	}
	return writeManifest(eth, manifest(res, 1500, packets, eth), stdout)
}

// manifest is the gencap manifest of a bulk capture at path: what the bench
// reads of it.
func manifest(res *kafkatest.BulkResult, mtu int, packets int64, path string) *gencap.Manifest {
	m := &gencap.Manifest{
		Config: gencap.Config{MTU: mtu},
		Port:   uint16(res.Port),
		Source: "kgo producers against kfake, tcpdump on loopback (internal/kafkatest/cmd/realcap)",
		Totals: gencap.Totals{Packets: packets, ProduceRequests: res.ProduceRequests, ProduceResponses: res.ProduceRequests,
			Records: res.Records, Verdicts: map[string]int64{}},
	}
	if st, err := os.Stat(path); err == nil {
		m.Totals.Bytes = st.Size()
	}
	for _, r := range res.Resends {
		m.Resends = append(m.Resends, gencap.Resend{Client: r.Client, Broker: r.Broker, Topic: r.Topic, Partition: r.Partition,
			Idempotent: r.Idempotent, CorrelationIDs: r.CorrelationIDs, Verdict: r.Verdict, AppendedOffsets: r.AppendedOffsets})
		m.Totals.Verdicts[r.Verdict]++
	}
	m.Totals.Resends = int64(len(m.Resends))
	return m
}

// writeManifest writes m, the manifest of capture, beside it (atomically)
// and prints its path.
func writeManifest(capture string, m *gencap.Manifest, stdout io.Writer) error {
	path := gencap.ManifestPath(capture)
	if err := m.WriteFile(path); err != nil {
		return err // gencap: write manifest: ...
	}
	fmt.Fprintln(stdout, path)
	return nil
}

// convert writes src, converted by conv (re-cut, or as pcapng), into dst
// and returns its packets.
func convert(src, dst string, conv func(dst io.Writer, src io.Reader) (int64, error)) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("realcap: %w", err)
	}
	defer in.Close()
	f, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("realcap: %w", err)
	}
	defer os.Remove(f.Name())
	n, err := conv(f, in)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		return 0, fmt.Errorf("realcap: %s: %w", dst, err)
	}
	return n, nil
}

// countPackets counts the packets of the pcap at path.
func countPackets(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("realcap: %w", err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("realcap: %s: %w", path, err)
	}
	var n int64
	for {
		_, _, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("realcap: %s: packet %d: %w", path, n+1, err)
		}
		n++
	}
}
