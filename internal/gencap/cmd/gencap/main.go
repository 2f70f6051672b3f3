// Command gencap writes a synthetic Kafka produce capture and its manifest
// (FILE.manifest.json, the expected findings) for kdupcap's benchmarks.
//
//	gencap -o bench.pcap -size 100MB -mtu 65535 -seed 1
//	gencap -tls -o bench-tls.pcap -size 100MB [-secrets]
//
// With -tls every connection is TLS 1.3 and the key log goes to FILE.keys
// (NSS format, for `kdupcap analyze --tls-keylog FILE.keys FILE`); with
// -secrets too, FILE is a pcapng that carries the keys itself. It prints
// the manifest's path.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kdupcap/kdupcap/internal/gencap"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output streams; it returns the
// exit code: 0 done, 2 usage, 1 failure.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gencap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := gencap.DefaultConfig()
	out := fs.String("o", "", "capture file to write (required)")
	size := fs.String("size", "100MB", "target file size: bytes or with a B, KB, MB, GB suffix (powers of 1024)")
	mtu := fs.Int("mtu", def.MTU, "65535 (loopback style) or 1500 (Ethernet style)")
	seed := fs.Int64("seed", def.Seed, "seed; the same flags give the same file")
	conns := fs.Int("conns", def.Conns, "client connections open at once")
	brokers := fs.Int("brokers", def.Brokers, "brokers")
	resend := fs.Int("resend-every", def.ResendEvery, "every N-th batch is resent (negative: never)")
	retransmit := fs.Int("retransmit-every", def.RetransmitEvery, "every N-th data segment is written twice (negative: never)")
	useTLS := fs.Bool("tls", false, "make every connection TLS 1.3 and write the key log to FILE.keys")
	secrets := fs.Bool("secrets", false, "with -tls: write a pcapng carrying the keys in Decryption Secrets Blocks")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "gencap: usage: gencap -o FILE [-size 100MB] [-mtu 65535|1500] [-seed N] [-tls [-secrets]]")
		return 2
	}
	target, err := gencap.ParseSize(*size)
	if err != nil {
		fmt.Fprintf(stderr, "gencap: -size: %v\n", err)
		return 2
	}
	cfg := gencap.Config{
		TargetBytes: target, MTU: *mtu, Seed: *seed, Conns: *conns, Brokers: *brokers,
		ResendEvery: *resend, RetransmitEvery: *retransmit, TLS: *useTLS, Secrets: *secrets,
	}
	path, err := write(*out, cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// write generates the capture at out and its manifest next to it (with
// cfg.TLS its key log too), and returns the manifest's path. The capture,
// key log and manifest are written to temporary files renamed once
// complete, so a failure leaves no partial file and an existing out
// untouched.
func write(out string, cfg gencap.Config) (string, error) {
	f, err := createTemp(out)
	if err != nil {
		return "", err
	}
	var keys *os.File
	if cfg.TLS {
		if keys, err = createTemp(gencap.KeyLogPath(out)); err != nil {
			f.Close()
			os.Remove(f.Name())
			return "", err
		}
	}
	var kw io.Writer // a nil *os.File is no io.Writer to skip
	if keys != nil {
		kw = keys
	}
	m, err := gencap.GenerateKeyLog(f, kw, cfg)
	err = finish(f, out, err)
	if keys != nil {
		err = finish(keys, gencap.KeyLogPath(out), err)
	}
	if err != nil {
		return "", err
	}
	path := gencap.ManifestPath(out)
	return path, m.WriteFile(path)
}

// createTemp creates the temporary file that becomes path.
func createTemp(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("gencap: %w", err)
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("gencap: %w", err)
	}
	return f, nil
}

// finish closes f, written to with the outcome err, and renames it to path
// if all went well, else removes it; it returns the first error.
func finish(f *os.File, path string, err error) error {
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gencap: close %s: %w", f.Name(), cerr)
	}
	if err == nil {
		if rerr := os.Rename(f.Name(), path); rerr != nil {
			err = fmt.Errorf("gencap: %w", rerr)
		}
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
