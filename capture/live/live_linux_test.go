//go:build linux

package live

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/internal/testenv"
)

// helperEnv makes the test binary, run again as a child, do one of the
// helper tests' work instead of skipping them.
const helperEnv = "KDUPCAP_LIVE_HELPER"

// TestOpenStub opens through a stubbed socket: what Open asks for, and
// what it makes of the socket's errors.
func TestOpenStub(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lo := loopbackName(t)
	for _, tt := range []struct {
		name    string
		iface   string
		ringErr error
		check   func(t *testing.T, cfg ringConfig, err error)
	}{
		{"loopback", lo, nil, func(t *testing.T, cfg ringConfig, err error) {
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.filter
			if cfg.iface != lo || cfg.cooked || f.link != layers.LinkTypeEthernet || !f.rejectOutgoing ||
				f.snapLen != DefaultSnapLen || !slices.Equal(f.ports, []uint16{9092}) ||
				cfg.blocks != 64 || cfg.blockBytes != 1<<20 || cfg.blockTimeout != DefaultBlockTimeout || cfg.pollTimeout != DefaultPollTimeout {
				t.Errorf("config %+v", cfg)
			}
		}},
		{"any", "any", nil, func(t *testing.T, cfg ringConfig, err error) {
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.filter
			if cfg.iface != "" || !cfg.cooked || f.link != layers.LinkTypeRaw || f.rejectOutgoing || len(f.loopbacks) == 0 {
				t.Errorf("config %+v", cfg)
			}
		}},
		{"no such interface", "nosuch0", nil, func(t *testing.T, _ ringConfig, err error) {
			if err == nil || err.Error() != "live: opening nosuch0: no such network interface" {
				t.Errorf("err = %v", err)
			}
		}},
		{"EPERM", lo, syscall.EPERM, func(t *testing.T, _ ringConfig, err error) {
			want := fmt.Sprintf("live: opening %s needs root or CAP_NET_RAW (setcap cap_net_raw,cap_net_admin+ep %s): operation not permitted", lo, exe)
			var pe *PermissionError
			if !errors.As(err, &pe) || err.Error() != want || !errors.Is(err, os.ErrPermission) {
				t.Errorf("err = %v, want %q", err, want)
			}
		}},
		{"EACCES wrapped", "any", fmt.Errorf("setsockopt: %w", syscall.EACCES), func(t *testing.T, _ ringConfig, err error) {
			var pe *PermissionError
			if !errors.As(err, &pe) || pe.Interface != "any" || pe.Err != syscall.EACCES {
				t.Errorf("err = %v, want a *PermissionError", err)
			}
		}},
		{"other error", lo, syscall.ENOMEM, func(t *testing.T, _ ringConfig, err error) {
			var pe *PermissionError
			if errors.As(err, &pe) || !errors.Is(err, syscall.ENOMEM) || !strings.HasPrefix(err.Error(), "live: opening "+lo+": ") {
				t.Errorf("err = %v", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got ringConfig
			s, err := Open(Options{Interface: tt.iface, Ports: []uint16{9092}, openRing: func(cfg ringConfig) (ring, error) {
				got = cfg
				if tt.ringErr != nil {
					return nil, tt.ringErr
				}
				return &fakeRing{t: t}, nil
			}})
			if err == nil {
				defer s.Close()
			}
			tt.check(t, got, err)
		})
	}
}

// loopbackName is the name of a loopback interface ("lo").
func loopbackName(t testing.TB) string {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagLoopback != 0 {
			return ifi.Name
		}
	}
	t.Fatal("no loopback interface")
	return ""
}

// requireRoot skips t unless it runs as root, or fails it under CI
// (testenv.Root): live capture needs root.
func requireRoot(t testing.TB) {
	t.Helper()
	testenv.Root(t)
}

// recorder is a capture.Stream that keeps what it is given.
type recorder struct {
	a, b   netip.AddrPort
	data   [2]bytes.Buffer // [0] from a, [1] from b
	gaps   int
	closed bool
}

func (r *recorder) Data(fromA bool, data []byte, _ time.Time) bool {
	if fromA {
		r.data[0].Write(data)
	} else {
		r.data[1].Write(data)
	}
	return true
}

func (r *recorder) Gap(bool, int, time.Time) { r.gaps++ }
func (r *recorder) Close(time.Time)          { r.closed = true }

// exchange makes one TCP connection to ln: the client sends req, the
// server answers resp once it has read all of it, both close. It returns
// the client's address. It may run on any goroutine.
func exchange(ln net.Listener, req, resp []byte) (netip.AddrPort, error) {
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		got, err := io.ReadAll(c)
		if err == nil && !bytes.Equal(got, req) {
			err = fmt.Errorf("server read %d bytes, want %d", len(got), len(req))
		}
		if err == nil {
			_, err = c.Write(resp)
		}
		srvErr <- err
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return netip.AddrPort{}, err
	}
	defer c.Close()
	client := c.LocalAddr().(*net.TCPAddr).AddrPort()
	if _, err := c.Write(req); err != nil {
		return client, err
	}
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err == nil && !bytes.Equal(got, resp) {
		err = fmt.Errorf("client read %d bytes, want %d", len(got), len(resp))
	}
	if err != nil {
		return client, err
	}
	return client, <-srvErr
}

func listen(t testing.TB) (net.Listener, uint16) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, uint16(ln.Addr().(*net.TCPAddr).Port)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestLoopback captures real traffic on the loopback interface, by name
// and through "any": only the filtered port's packets arrive, once each,
// with plausible times, and capture's Assembler rebuilds the bytes sent.
func TestLoopback(t *testing.T) {
	requireRoot(t)
	for _, tt := range []struct {
		iface string
		link  layers.LinkType
	}{
		{loopbackName(t), layers.LinkTypeEthernet},
		{"any", layers.LinkTypeRaw},
	} {
		t.Run(tt.iface, func(t *testing.T) {
			kafka, port := listen(t)
			other, otherPort := listen(t)
			src, err := Open(Options{Interface: tt.iface, Ports: []uint16{port}, RingBytes: 16 << 20,
				BlockTimeout: 10 * time.Millisecond, PollTimeout: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if src.LinkType() != tt.link {
				t.Errorf("link type %v, want %v", src.LinkType(), tt.link)
			}
			// The traffic runs while the test reads, as kdupcap does: a
			// V3 ring nobody reads fills up with blocks retired by timeout.
			start := time.Now()
			req, resp := randomBytes(200_000), randomBytes(30_000)
			var client netip.AddrPort
			var end time.Time
			traffic := make(chan error, 1)
			go func() {
				var err error
				client, err = exchange(kafka, req, resp)
				if err == nil {
					_, err = exchange(other, randomBytes(50_000), randomBytes(1000))
				}
				end = time.Now()
				traffic <- err
			}()

			var rec *recorder
			asm := capture.NewAssembler(func(a, b netip.AddrPort, _ time.Time) capture.Stream {
				rec = &recorder{a: a, b: b}
				return rec
			}, capture.AssemblerOptions{})
			type copyKey struct {
				srcPort uint16
				ipID    uint16
				seq     uint32
				n       int
			}
			copies := make(map[copyKey]int) // a packet seen twice has the same IP ID
			var times []time.Time
			n, quiet, done := 0, 0, false
			for deadline := time.Now().Add(20 * time.Second); !done || quiet < 5; {
				if time.Now().After(deadline) {
					t.Fatal("traffic or capture did not end")
				}
				if !done {
					select {
					case err := <-traffic:
						if err != nil {
							t.Fatal(err)
						}
						done = true
					default:
					}
				}
				p, err := src.Next()
				if errors.Is(err, ErrTimeout) {
					quiet++
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				quiet = 0
				n++
				if p.LinkType != tt.link {
					t.Fatalf("packet %d: link type %v", n, p.LinkType)
				}
				times = append(times, p.CI.Timestamp)
				pkt := gopacket.NewPacket(p.Data, p.LinkType, gopacket.NoCopy)
				ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
				switch {
				case ip == nil || tcp == nil:
					t.Errorf("packet %d is not TCP/IPv4: %v", n, pkt)
				case uint16(tcp.SrcPort) != port && uint16(tcp.DstPort) != port:
					t.Errorf("packet %d: ports %d->%d, filter is port %d (other listener %d)", n, tcp.SrcPort, tcp.DstPort, port, otherPort)
				default:
					copies[copyKey{uint16(tcp.SrcPort), ip.Id, tcp.Seq, len(tcp.Payload)}]++
				}
				asm.Add(p)
			}
			for i, ts := range times {
				if ts.Before(start.Add(-time.Second)) || ts.After(end.Add(time.Second)) {
					t.Errorf("packet %d: time %v outside %v..%v", i+1, ts, start, end)
				}
			}
			for k, c := range copies {
				if c > 1 {
					t.Errorf("packet %+v seen %d times", k, c)
				}
			}
			asm.Close()
			st, ast := src.Stats(), asm.Stats()
			t.Logf("%d packets; source %+v", n, st)
			if n == 0 || rec == nil {
				t.Fatalf("no packet of the connection from %v captured", client)
			}
			if st.Received != uint64(n) || st.Packets < st.Received {
				t.Errorf("source stats %+v for %d packets", st, n)
			}
			whole := bytes.Equal(rec.data[0].Bytes(), req) && bytes.Equal(rec.data[1].Bytes(), resp) && rec.gaps == 0
			switch {
			case st.Drops > 0 && whole:
				t.Errorf("%d drops counted, but nothing is missing", st.Drops)
			case st.Drops > 0:
				// The machine starved the reader: the drop shows, as it must.
				t.Logf("%d drops under load: %d and %d bytes with %d gaps", st.Drops, rec.data[0].Len(), rec.data[1].Len(), rec.gaps)
			case !whole || !rec.closed:
				t.Errorf("reassembled %d and %d bytes with %d gaps (closed %v), want %d and %d",
					rec.data[0].Len(), rec.data[1].Len(), rec.gaps, rec.closed, len(req), len(resp))
			}
			if ast.Undecodable != 0 || ast.NonTCP != 0 || ast.TCPConnections != 1 {
				t.Errorf("assembler %+v: packets not decoded, or not of the one connection", ast)
			}
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := src.Next(); err != ErrClosed {
				t.Errorf("Next after Close: %v", err)
			}
		})
	}
}

// runHelper runs the named helper test in a child process; cmd runs the
// test binary at path exe with the given arguments before the test flags.
func runHelper(t *testing.T, name string, argv ...string) string {
	t.Helper()
	args := append(argv[1:], "-test.run=^"+name+"$", "-test.v")
	cmd := exec.Command(argv[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "helper ok") {
		t.Fatalf("child %v: %v\n%s", cmd.Args, err, out)
	}
	return string(out)
}

func isHelper(t *testing.T) {
	if os.Getenv(helperEnv) != t.Name() {
		t.Skip("run as a child process by another test")
	}
}

// TestDropPrivileges opens the loopback as root in a child process, drops
// to nobody there and checks that the IDs changed for good, that the open
// socket still captures and that opening another one is refused.
func TestDropPrivileges(t *testing.T) {
	requireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(runHelper(t, "TestHelperDropPrivileges", exe))
}

func TestHelperDropPrivileges(t *testing.T) {
	isHelper(t)
	ln, port := listen(t)
	// Nothing is read until the exchange is over: a ring of 16 blocks
	// retired every 100ms holds it, however slow the machine.
	src, err := Open(Options{Interface: loopbackName(t), Ports: []uint16{port}, RingBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := DropPrivileges("nobody"); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 65534 || os.Geteuid() != 65534 || os.Getgid() != 65534 {
		t.Fatalf("uid %d euid %d gid %d after dropping to nobody", os.Getuid(), os.Geteuid(), os.Getgid())
	}
	if err := syscall.Setuid(0); err == nil {
		t.Fatal("setuid 0 works after dropping privileges")
	}
	checkPermissionError(t)
	if _, err := exchange(ln, []byte("after the drop"), []byte("still captured")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		p, err := src.Next()
		if err == nil && bytes.Contains(p.Data, []byte("still captured")) {
			break
		}
		if err != nil && !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing captured after dropping privileges")
		}
	}
	fmt.Println("helper ok")
}

// checkPermissionError opens the loopback without the privilege.
func checkPermissionError(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lo := loopbackName(t)
	s, err := Open(Options{Interface: lo})
	if err == nil {
		s.Close()
		t.Fatalf("opened %s as user %d", lo, os.Geteuid())
	}
	want := fmt.Sprintf("live: opening %s needs root or CAP_NET_RAW (setcap cap_net_raw,cap_net_admin+ep %s): operation not permitted", lo, exe)
	var pe *PermissionError
	if !errors.As(err, &pe) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestUnprivileged opens the loopback as a user without the privilege: in
// this process if it runs as one, else in a copy of the test binary run
// as nobody with setpriv.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		checkPermissionError(t)
		return
	}
	// Without setpriv the stubbed socket of TestOpenStub covers the error,
	// but not under CI.
	setpriv := testenv.Tool(t, "setpriv")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The build directory is private: copy the binary where nobody can run it.
	dir, err := os.MkdirTemp("", "kdupcap-live-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(dir, "live.test")
	if err := os.WriteFile(copyExe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Log(runHelper(t, "TestHelperUnprivileged", setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", copyExe))
}

func TestHelperUnprivileged(t *testing.T) {
	isHelper(t)
	if os.Geteuid() == 0 {
		t.Fatal("still root")
	}
	checkPermissionError(t)
	fmt.Println("helper ok")
}

// TestPromiscuous opens the loopback in promiscuous mode, which the
// kernel undoes when the socket closes.
func TestPromiscuous(t *testing.T) {
	requireRoot(t)
	src, err := Open(Options{Interface: loopbackName(t), Promiscuous: true, RingBytes: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}
