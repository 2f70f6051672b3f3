package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kdupcap/kdupcap/fleet"
	"github.com/kdupcap/kdupcap/pipeline"
	"github.com/kdupcap/kdupcap/report"
	"github.com/kdupcap/kdupcap/report/emit"
)

// The Kafka clients kdupcap itself runs (--emit, --attempts, correlate's
// --from) share one set of connection flags: TLS and SASL.

// kafkaFlags are the --kafka-* flags.
type kafkaFlags struct {
	tls                bool
	ca, cert, key      string
	serverName         string
	mechanism          string
	user, passwordFile string
}

// passwordEnv names the environment variable --kafka-user's password may
// come from instead of --kafka-password-file.
const passwordEnv = "KDUPCAP_KAFKA_PASSWORD"

func addKafkaFlags(fs *flag.FlagSet) *kafkaFlags {
	k := &kafkaFlags{}
	fs.BoolVar(&k.tls, "kafka-tls", false, "connect to the Kafka clusters of --emit and --attempts (correlate: --from) over TLS (implied by --kafka-ca, --kafka-cert)")
	fs.StringVar(&k.ca, "kafka-ca", "", "PEM `FILE` of the CA certificates that sign the brokers' (default: the system's)")
	fs.StringVar(&k.cert, "kafka-cert", "", "PEM `FILE` of the client certificate for TLS client authentication (with --kafka-key)")
	fs.StringVar(&k.key, "kafka-key", "", "PEM `FILE` of --kafka-cert's private key")
	fs.StringVar(&k.serverName, "kafka-server-name", "", "the `NAME` the brokers' certificates are checked against (default: the host of each address)")
	fs.Func("kafka-sasl", "authenticate with SASL `MECHANISM`: plain, scram-sha-256 or scram-sha-512, as --kafka-user", func(s string) error {
		switch s {
		case "plain", "scram-sha-256", "scram-sha-512":
			k.mechanism = s
			return nil
		}
		return errors.New("want plain, scram-sha-256 or scram-sha-512")
	})
	fs.StringVar(&k.user, "kafka-user", "", "the SASL `USER`")
	fs.StringVar(&k.passwordFile, "kafka-password-file", "", "a `FILE` holding the SASL password (default: the "+passwordEnv+" environment variable); never on the command line")
	return k
}

// options reads the flags into the clients' options.
func (k *kafkaFlags) options() (fleet.ClientOptions, error) {
	var o fleet.ClientOptions
	if k.tls || k.ca != "" || k.cert != "" || k.key != "" || k.serverName != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.serverName}
		if k.ca != "" {
			pem, err := os.ReadFile(k.ca)
			if err != nil {
				return o, fmt.Errorf("--kafka-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return o, fmt.Errorf("--kafka-ca %s: no PEM certificate in it", k.ca)
			}
			cfg.RootCAs = pool
		}
		if (k.cert == "") != (k.key == "") {
			return o, errors.New("--kafka-cert and --kafka-key go together")
		}
		if k.cert != "" {
			c, err := tls.LoadX509KeyPair(k.cert, k.key)
			if err != nil {
				return o, fmt.Errorf("--kafka-cert: %w", err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		o.TLS = cfg
	}
	if k.mechanism == "" {
		if k.user != "" || k.passwordFile != "" {
			return o, errors.New("--kafka-user needs --kafka-sasl")
		}
		return o, nil
	}
	if k.user == "" {
		return o, fmt.Errorf("--kafka-sasl %s needs --kafka-user", k.mechanism)
	}
	pass := os.Getenv(passwordEnv)
	if k.passwordFile != "" {
		b, err := os.ReadFile(k.passwordFile)
		if err != nil {
			return o, fmt.Errorf("--kafka-password-file: %w", err)
		}
		pass = strings.TrimRight(string(b), "\r\n")
	}
	switch k.mechanism {
	case "plain":
		o.SASL = plain.Auth{User: k.user, Pass: pass}.AsMechanism()
	case "scram-sha-256":
		o.SASL = scram.Auth{User: k.user, Pass: pass}.AsSha256Mechanism()
	case "scram-sha-512":
		o.SASL = scram.Auth{User: k.user, Pass: pass}.AsSha512Mechanism()
	}
	return o, nil
}

// newEmitter is the --emit sink with the --kafka-* options.
func newEmitter(url string, co fleet.ClientOptions) (*emit.Kafka, error) {
	seeds, topic, err := emit.ParseURL(url)
	if err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if co.SASL != nil {
		opts = append(opts, kgo.SASL(co.SASL))
	}
	return emit.NewKafkaTLS(seeds, topic, co.TLS, opts...)
}

// attemptsFlags are --attempts and --host, of analyze and live.
type attemptsFlags struct {
	url  string
	host string
}

func addAttemptsFlags(fs *flag.FlagSet) *attemptsFlags {
	a := &attemptsFlags{}
	fs.StringVar(&a.url, "attempts", "", "also publish every produce attempt and its answer (and how each connection ended) to `kafka://HOST:PORT[,HOST:PORT]/TOPIC`, for kdupcap correlate to find re-sends across broker hosts")
	fs.StringVar(&a.host, "host", "", "the capture host's `NAME` in the attempts published (default: the host name)")
	return a
}

// check parses the --attempts URL, if given.
func (a *attemptsFlags) check() error {
	if a.url == "" {
		if a.host != "" {
			return errors.New("--host names the host of --attempts: give --attempts too")
		}
		return nil
	}
	_, _, err := emit.ParseURL(a.url)
	if err != nil {
		return fmt.Errorf("--attempts: %w", err)
	}
	if a.host == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return errors.New("--attempts: no host name known: give --host NAME")
		}
		a.host = h
	}
	return nil
}

// open starts the publisher of --attempts (nil when not asked for).
func (a *attemptsFlags) open(co fleet.ClientOptions, o pipeline.Options) (*attemptsPublisher, error) {
	if a.url == "" {
		return nil, nil
	}
	seeds, topic, _ := emit.ParseURL(a.url)
	var run [8]byte
	_, _ = rand.Read(run[:])
	prints := fleet.PrintsNear
	switch {
	case o.AppDuplicates:
		prints = fleet.PrintsAll
	case !o.RecordMatch:
		prints = fleet.PrintsNone
	}
	p, err := fleet.NewPublisher(fleet.PublisherOptions{Seeds: seeds, Topic: topic, Client: co,
		Encoder: fleet.EncoderOptions{Host: a.host, Run: binary.BigEndian.Uint64(run[:]) >> 1, Prints: prints}})
	if err != nil {
		return nil, err
	}
	return &attemptsPublisher{Publisher: p, url: a.url, host: a.host}, nil
}

// attemptsPublisher is the publisher of --attempts.
type attemptsPublisher struct {
	*fleet.Publisher
	url, host string
	closed    bool
}

// close delivers what is buffered (within 10s) and says what was
// published, for the summary; err reports records not delivered.
func (p *attemptsPublisher) close() (*report.AttemptsSummary, error) {
	if p == nil {
		return nil, nil
	}
	p.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.Close(ctx)
	s := p.Stats()
	return &report.AttemptsSummary{Target: p.url, Host: p.host, Records: s.Records, Bytes: s.Bytes,
		Delivered: s.Delivered, Dropped: s.Dropped, Failed: s.Failed, Errors: s.Errors}, err
}

// release closes the publisher unless close did: deferred right after it
// is opened, so that a run that fails before its summary leaves no client
// behind (what it buffered is delivered within 10s).
func (p *attemptsPublisher) release() {
	if p == nil || p.closed {
		return
	}
	p.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Close(ctx)
}

// ownConns answers whether a connection is one of kdupcap's own clients'
// (the emitter's, the publisher's), to leave it out of a live capture.
func ownConns(fns ...func(a, b netip.AddrPort) bool) func(a, b netip.AddrPort) bool {
	var live []func(a, b netip.AddrPort) bool
	for _, f := range fns {
		if f != nil {
			live = append(live, f)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return func(a, b netip.AddrPort) bool {
		for _, f := range live {
			if f(a, b) {
				return true
			}
		}
		return false
	}
}

// openAttempts starts the --attempts publisher of analyze or live: nil
// when not asked for; a failure is said on stderr with its exit code.
func openAttempts(a *attemptsFlags, k *kafkaFlags, o pipeline.Options, stderr io.Writer) (*attemptsPublisher, int) {
	if a.url == "" {
		return nil, exitOK
	}
	co, err := k.options()
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: %v\n", err)
		return nil, exitUsage
	}
	p, err := a.open(co, o)
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: --attempts %s: %v\n", a.url, err)
		return nil, exitUsage
	}
	return p, exitOK
}

// closeAttempts delivers the publisher's last records and puts what it
// published in the summary; it reports whether records were lost (said
// on stderr).
func closeAttempts(p *attemptsPublisher, sum *report.Summary, stderr io.Writer) bool {
	if p == nil {
		return false
	}
	s, err := p.close()
	sum.Attempts = s
	if err != nil {
		fmt.Fprintf(stderr, "kdupcap: --attempts: %v\n", err)
		return true
	}
	return false
}

// ownEmit and ownAttempts are the own-connection tests of a live run's
// emitter and publisher, nil when there is none.
func (r *liveRun) ownEmit() func(a, b netip.AddrPort) bool {
	if r.emitter == nil {
		return nil
	}
	return r.emitter.IsOwnConn
}

func (r *liveRun) ownAttempts() func(a, b netip.AddrPort) bool {
	if r.pub == nil {
		return nil
	}
	return r.pub.IsOwnConn
}
