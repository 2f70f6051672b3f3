package kafkatest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PythonPath is the interpreter KafkaPythonProduce runs: Debian's, where
// the python3-kafka package installs kafka-python.
const PythonPath = "/usr/bin/python3"

//go:embed testdata/kafka_python_produce.py
var kafkaPythonScript []byte

// KafkaPythonErr says why kafka-python cannot run here (PythonPath
// missing, or no kafka module: install python3-kafka), or nil.
func KafkaPythonErr() error {
	if _, err := os.Stat(PythonPath); err != nil {
		return fmt.Errorf("kafkatest: %s: %w", PythonPath, err)
	}
	if out, err := exec.Command(PythonPath, "-c", "import kafka").CombinedOutput(); err != nil {
		return fmt.Errorf("kafkatest: kafka-python (Debian's python3-kafka) not installed: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// CertPEM is the broker's self-signed certificate in PEM, the CA a client
// with its own TLS stack trusts.
func (t *TLS) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: t.cert.Certificate[0]})
}

// KafkaPython configures KafkaPythonProduce.
type KafkaPython struct {
	// TLS is the cluster's; its certificate is the client's CA. The
	// client's own TLS stack (Python's ssl, OpenSSL) appends its NSS key
	// log to KeyLogPath (SSLContext.keylog_filename), not to TLS.KeyLog.
	TLS        *TLS
	KeyLogPath string
	// MaxTLS12 caps the client at TLS 1.2 (SSLContext.maximum_version);
	// otherwise OpenSSL's default (TLS 1.3).
	MaxTLS12 bool
	// Ciphers, if set, is the OpenSSL cipher string of the TLS 1.2 suites
	// the client offers (SSLContext.set_ciphers), e.g.
	// "ECDHE-ECDSA-CHACHA20-POLY1305".
	Ciphers string
	// RequestTimeout is kafka-python's request_timeout_ms (0: 5s): its
	// own deadline for a response, after which it closes the connection.
	// ProduceTimeout, when set, is sent instead as the produce request's
	// TimeoutMillis (kafka-python sends request_timeout_ms there: equal,
	// a broker answering at TimeoutMillis races the client's deadline).
	RequestTimeout, ProduceTimeout time.Duration
	// ClientID is the request header's client.id ("": "kafka-python");
	// Partitions as Producer's.
	ClientID   string
	Partitions int32
	// Log receives kafka-python's stderr (one line a record produced),
	// if set.
	Log func(string)
}

// KafkaPythonProduce returns a ProduceFunc that writes the values with
// kafka-python 2.0.2 (PythonPath, python3-kafka) over SSL: one value a
// request (linger 0, one request in flight), to partition i % Partitions,
// acks=all, retries=5, no compression, each send waited for. kafka-python
// is not idempotent and speaks Produce v7 to kfake. The values must not
// contain newlines.
func KafkaPythonProduce(p KafkaPython) ProduceFunc {
	return func(ctx context.Context, addr, topic string, values []string) error {
		if p.TLS == nil || p.KeyLogPath == "" {
			return errors.New("kafkatest: kafka-python: needs TLS and KeyLogPath")
		}
		dir, err := os.MkdirTemp("", "kafkatest-python-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		script, ca := filepath.Join(dir, "produce.py"), filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(script, kafkaPythonScript, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(ca, p.TLS.CertPEM(), 0o600); err != nil {
			return err
		}
		req := p.RequestTimeout
		if req <= 0 {
			req = 5 * time.Second
		}
		cfg := map[string]any{
			"addr": addr, "topic": topic, "partitions": max(p.Partitions, 1),
			"cafile": ca, "keylog": p.KeyLogPath, "client_id": p.ClientID,
			"request_timeout_ms": req.Milliseconds(), "produce_timeout_ms": p.ProduceTimeout.Milliseconds(),
		}
		if p.ClientID == "" {
			cfg["client_id"] = "kafka-python"
		}
		if p.Ciphers != "" {
			cfg["ciphers"] = p.Ciphers
		}
		if p.MaxTLS12 {
			cfg["max_version"] = "TLSv1_2"
		}
		arg, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, PythonPath, script, string(arg))
		cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		if p.Log != nil {
			p.Log(out.String())
		}
		if err != nil {
			return fmt.Errorf("kafkatest: kafka-python: %w: %s", err, out.String())
		}
		return nil
	}
}
