package tlsdecrypt

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// needOpenSSL skips a test when openssl is missing, except in CI.
func needOpenSSL(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("openssl not installed (CI is set)")
		}
		t.Skip("openssl not installed")
	}
	return p
}

// proxy relays TCP connections to target, recording each side's reads.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*recorder
	total  [2]int
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		r := &recorder{}
		p.mu.Lock()
		p.conns = append(p.conns, r)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.relay(c, s, r, true)
		go p.relay(s, c, r, false)
	}
}

func (p *proxy) relay(from, to net.Conn, r *recorder, fromA bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			r.add(fromA, buf[:n])
			p.mu.Lock()
			p.total[idx(fromA)] += n
			p.mu.Unlock()
			to.Write(buf[:n])
		}
		if err != nil {
			if tc, ok := to.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

func (p *proxy) totals() [2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// settle waits until the bytes seen stop changing (and, when grow is
// set, have grown in that direction).
func (p *proxy) settle(t *testing.T, start [2]int, grow int, what string) {
	t.Helper()
	last, quiet := start, 0
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		cur := p.totals()
		if cur != last {
			last, quiet = cur, 0
			continue
		}
		quiet++
		if quiet >= 8 && (grow < 0 || cur[grow] > start[grow]) {
			return
		}
	}
	t.Fatalf("openssl: no traffic after %s: %v", what, p.totals())
}

// osslStep is a line typed into s_client (client) or s_server.
type osslStep struct {
	client bool
	line   string // "K" and "k" ask for a KeyUpdate
}

// opensslSessions runs openssl s_server and one s_client per clientArgs
// through a recording proxy; each client types the steps. The key log is
// the server's.
func opensslSessions(t *testing.T, serverArgs []string, clientArgs [][]string, steps []osslStep) ([]*session, []byte) {
	t.Helper()
	bin := needOpenSSL(t)
	certs(t)
	dir := t.TempDir()
	certF, keyF, logF := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "keys.log")
	os.WriteFile(certF, rsaPEM, 0o600)
	os.WriteFile(keyF, rsaKeyPEM, 0o600)
	srv := exec.Command(bin, append([]string{"s_server", "-accept", "127.0.0.1:0", "-cert", certF, "-key", keyF, "-keylogfile", logF}, serverArgs...)...)
	srvIn, _ := srv.StdinPipe()
	srvOut, _ := srv.StdoutPipe()
	srv.Stderr = io.Discard
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srvIn.Close(); srv.Process.Kill(); srv.Wait() }()
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(srvOut)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ACCEPT "); ok {
				addrc <- a
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(10 * time.Second):
		t.Fatal("s_server did not start")
	}
	p := newProxy(t, addr)
	var out []*session
	for _, ca := range clientArgs {
		s := &session{}
		startTotals := p.totals()
		cl := exec.Command(bin, append([]string{"s_client", "-connect", p.ln.Addr().String()}, ca...)...)
		clIn, _ := cl.StdinPipe()
		cl.Stdout, cl.Stderr = io.Discard, io.Discard
		if err := cl.Start(); err != nil {
			t.Fatal(err)
		}
		p.settle(t, startTotals, 1, "start")
		for _, st := range steps {
			w, dir := io.Writer(srvIn), 1
			if st.client {
				w, dir = clIn, 0
			}
			before := p.totals()
			io.WriteString(w, st.line+"\n")
			if st.line == "K" || st.line == "k" {
				p.settle(t, before, -1, st.line)
				continue
			}
			s.sent[dir] = append(s.sent[dir], st.line+"\n"...)
			p.settle(t, before, dir, st.line[:min(len(st.line), 20)])
		}
		clIn.Close()
		done := make(chan error, 1)
		go func() { done <- cl.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cl.Process.Kill()
			t.Fatal("s_client did not exit")
		}
		p.settle(t, p.totals(), -1, "end")
		out = append(out, s)
	}
	p.mu.Lock()
	for i, r := range p.conns {
		r.mu.Lock()
		out[i].events = r.events
		r.mu.Unlock()
	}
	p.mu.Unlock()
	kl, err := os.ReadFile(logF)
	if err != nil {
		t.Fatal(err)
	}
	return out, kl
}

var keyUpdateSteps = []osslStep{
	{true, "produce request one"},
	{false, "response one"},
	{true, "K"},
	{true, "produce request two after a key update"},
	{false, "response two"},
	{true, "k"},
	{true, "produce request three"},
	{false, "response three " + strings.Repeat("x", 20000)},
	{true, strings.Repeat("y", 30000)},
}

func TestDecryptOpenSSL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		args       []string // for both s_server and s_client
		version    uint16
		suite      uint16
		etm        bool
		keyUpdates int
	}{
		{"tls13-chacha20-keyupdate", []string{"-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"}, tls.VersionTLS13, tls.TLS_CHACHA20_POLY1305_SHA256, false, 3},
		{"tls13-aes256gcm-keyupdate", []string{"-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384"}, tls.VersionTLS13, tls.TLS_AES_256_GCM_SHA384, false, 3},
		{"tls12-etm-cbc-sha1", []string{"-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"}, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, true, 0},
		{"tls12-etm-cbc-sha256", []string{"-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA256"}, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, true, 0},
		{"tls12-mte-cbc-sha1", []string{"-tls1_2", "-cipher", "ECDHE-RSA-AES256-SHA", "-no_etm"}, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, false, 0},
		{"tls12-rsa-kx-gcm", []string{"-tls1_2", "-cipher", "AES256-GCM-SHA384"}, tls.VersionTLS12, tls.TLS_RSA_WITH_AES_256_GCM_SHA384, false, 0},
		{"tls12-chacha20", []string{"-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"}, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps := keyUpdateSteps
			if tc.keyUpdates == 0 {
				steps = nil
				for _, s := range keyUpdateSteps {
					if s.line != "K" && s.line != "k" {
						steps = append(steps, s)
					}
				}
			}
			sessions, kl := opensslSessions(t, tc.args, [][]string{tc.args}, steps)
			sess := sessions[0]
			for _, mode := range []split{splitEvents, splitRandom, splitBytes} {
				d := New(keyLogOf(t, kl), Options{})
				s := run(d, chunks(sess.events, mode, 9))
				checkDecrypted(t, d, s, sess, tc.version, tc.suite)
				cs := onlyConn(t, d)
				if cs.EncryptThenMAC != tc.etm {
					t.Errorf("%s: encrypt-then-MAC %v", mode, cs.EncryptThenMAC)
				}
				if cs.KeyUpdates < tc.keyUpdates {
					t.Errorf("%s: %d KeyUpdates followed, want %d", mode, cs.KeyUpdates, tc.keyUpdates)
				}
			}
			d := New(keyLogOf(t, flipSecrets(kl)), Options{})
			if s := run(d, chunks(sess.events, splitRandom, 10)); len(s.data[0])+len(s.data[1]) > 0 {
				t.Error("plaintext with a wrong key")
			}
		})
	}
}

// TestSessionIDResumption: an openssl TLS 1.2 session resumed by session
// ID decrypts with only the original handshake's key log line.
func TestSessionIDResumption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sf := filepath.Join(dir, "sess.pem")
	args := []string{"-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"}
	sessions, kl := opensslSessions(t, append(args, "-no_ticket"),
		[][]string{append(args, "-sess_out", sf, "-no_ticket"), append(args, "-sess_in", sf, "-no_ticket")},
		[]osslStep{{true, "request"}, {false, "response"}})
	var lines [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(kl), []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("#")) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d key log lines, want 2:\n%s", len(lines), kl)
	}
	for name, log := range map[string][]byte{"both-lines": kl, "original-line-only": append(lines[0], '\n')} {
		t.Run(name, func(t *testing.T) {
			d := New(keyLogOf(t, log), Options{})
			var sinks []*sink
			for i, sess := range sessions {
				s, st := open(d, clientAddrN(i))
				feedAll(st, chunks(sess.events, splitRandom, uint64(i)))
				st.Close(time.Unix(3, 0))
				sinks = append(sinks, s)
			}
			cs := d.Conns()
			if len(cs) != 2 || !cs[1].Resumed || cs[1].Status != Decrypted || cs[0].Status != Decrypted {
				t.Fatalf("states %+v", cs)
			}
			for i, sess := range sessions {
				if !bytes.Equal(sinks[i].data[0], sess.sent[0]) || !bytes.Equal(sinks[i].data[1], sess.sent[1]) {
					t.Errorf("connection %d: plaintext differs", i)
				}
			}
		})
	}
}
