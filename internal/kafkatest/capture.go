package kafkatest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// Capture is a running tcpdump writing the loopback traffic of one or more
// TCP ports to a pcap file.
type Capture struct {
	Path string

	cmd  *exec.Cmd
	done chan struct{} // closed when stderr is drained
	// marker receives the UDP datagram that Stop sends through the capture
	// filter: once tcpdump has written it, it has written everything before.
	marker *net.UDPConn

	mu     sync.Mutex
	stderr strings.Builder
}

// CaptureStats is what tcpdump reported when it stopped.
type CaptureStats struct {
	Captured, ReceivedByFilter, DroppedByKernel int
}

// CanCapture says why StartCapture cannot work here, or nil: tcpdump must be
// on PATH and the process must be root. A test calls testenv.Capture
// instead, which skips it for that reason, or fails it under CI.
func CanCapture() error {
	if err := testenv.CaptureErr(); err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	return nil
}

// StartCapture starts tcpdump on lo for TCP port port, writing path, and
// returns once tcpdump says it is listening (or fails within ctx).
func StartCapture(ctx context.Context, path string, port int) (*Capture, error) {
	return StartCapturePorts(ctx, path, port)
}

// StartCapturePorts is StartCapture for every port of ports in one
// tcpdump (filter "tcp port A or tcp port B ..."), e.g. a cluster's Ports.
func StartCapturePorts(ctx context.Context, path string, ports ...int) (*Capture, error) {
	return startCapture(ctx, path, 65536, ports...)
}

// startCapture is StartCapturePorts with a kernel buffer of bufferKiB
// (tcpdump -B).
func startCapture(ctx context.Context, path string, bufferKiB int, ports ...int) (*Capture, error) {
	if len(ports) == 0 {
		return nil, fmt.Errorf("kafkatest: capture %s: no port", path)
	}
	var filter strings.Builder
	for i, p := range ports {
		if i > 0 {
			filter.WriteString(" or ")
		}
		fmt.Fprintf(&filter, "tcp port %d", p)
	}
	marker, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("kafkatest: marker socket: %w", err)
	}
	markerPort := marker.LocalAddr().(*net.UDPAddr).Port
	// -Z root: Debian's tcpdump otherwise drops to user tcpdump before
	// opening the file, which then cannot be written in a root-only TempDir.
	cmd := exec.Command("tcpdump", "-i", "lo", "-s", "0", "-B", strconv.Itoa(bufferKiB), "-U", "--immediate-mode",
		"-Z", "root", "-w", path, fmt.Sprintf("%s or udp dst port %d", filter.String(), markerPort))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		marker.Close()
		return nil, fmt.Errorf("kafkatest: tcpdump: %w", err)
	}
	if err := cmd.Start(); err != nil {
		marker.Close()
		return nil, fmt.Errorf("kafkatest: start tcpdump: %w", err)
	}
	c := &Capture{Path: path, cmd: cmd, done: make(chan struct{}), marker: marker}
	listening := make(chan struct{})
	go c.drain(stderr, listening)

	select {
	case <-listening:
		return c, nil
	case <-c.done:
		_ = cmd.Wait()
		marker.Close()
		return nil, fmt.Errorf("kafkatest: tcpdump exited before listening: %s", c.Stderr())
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-c.done
		_ = cmd.Wait()
		marker.Close()
		return nil, fmt.Errorf("kafkatest: tcpdump not listening: %w (stderr: %s)", ctx.Err(), c.Stderr())
	}
}

func (c *Capture) drain(r io.Reader, listening chan<- struct{}) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	said := false
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		c.stderr.WriteString(line + "\n")
		c.mu.Unlock()
		if !said && strings.Contains(line, "listening on") {
			said = true
			close(listening)
		}
	}
}

// raisePriority makes tcpdump the first to run on a busy machine (nice
// -10), so that a capture of heavy traffic loses nothing.
func (c *Capture) raisePriority() error {
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, c.cmd.Process.Pid, -10); err != nil {
		return fmt.Errorf("kafkatest: renice tcpdump: %w", err)
	}
	return nil
}

// Stderr is what tcpdump printed so far.
func (c *Capture) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

var statLine = regexp.MustCompile(`(\d+) packets? (captured|received by filter|dropped by kernel)`)

// Stop sends a marker datagram through the capture filter and waits (at most
// timeout) until tcpdump has written it: packets still in the kernel's buffer
// when tcpdump stops are lost without being counted as dropped, and tcpdump
// writes in order, so with the marker in the file everything before it is
// too. It then stops tcpdump with SIGINT (SIGKILL if it has not exited within
// timeout), waits for it and returns its counts. Packets dropped by the
// kernel, or left unread, are an error: the capture is then not the whole
// truth. kdupcap counts the UDP marker as a non-TCP packet and ignores it.
func (c *Capture) Stop(timeout time.Duration) (CaptureStats, error) {
	var st CaptureStats
	defer c.marker.Close()
	markerErr := c.waitMarker(timeout)
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	waitErr := c.cmd.Wait()
	out := c.Stderr()
	for _, m := range statLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		switch m[2] {
		case "captured":
			st.Captured = n
		case "received by filter":
			st.ReceivedByFilter = n
		case "dropped by kernel":
			st.DroppedByKernel = n
		}
	}
	if markerErr != nil {
		return st, markerErr
	}
	if !strings.Contains(out, "dropped by kernel") {
		return st, fmt.Errorf("kafkatest: tcpdump stopped without its counts (%v): %s", waitErr, out)
	}
	if st.DroppedByKernel != 0 {
		return st, fmt.Errorf("kafkatest: tcpdump: %d packets dropped by kernel, capture %s incomplete", st.DroppedByKernel, c.Path)
	}
	// No "received by filter" check: on lo the kernel counts each packet
	// once or twice (sent and received) and packets after the marker are
	// still in flight at SIGINT; the marker is what proves completeness.
	return st, nil
}

// waitMarker sends a unique datagram to the marker socket, again every
// 100ms, until the capture file holds it or timeout passes.
func (c *Capture) waitMarker(timeout time.Duration) error {
	token := []byte(fmt.Sprintf("kdupcap-capture-end-%d-%d", os.Getpid(), time.Now().UnixNano()))
	to := c.marker.LocalAddr().(*net.UDPAddr)
	conn, err := net.DialUDP("udp4", nil, to)
	if err != nil {
		return fmt.Errorf("kafkatest: marker: %w", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	var seen int64 // bytes of the file searched already, but a token's length
	for i := 0; time.Now().Before(deadline); i++ {
		if i%4 == 0 {
			if _, err := conn.Write(token); err != nil {
				return fmt.Errorf("kafkatest: marker: %w", err)
			}
		}
		found, n := fileHolds(c.Path, seen, token)
		if found {
			return nil
		}
		seen = n
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("kafkatest: tcpdump did not write the end marker within %v: capture %s incomplete", timeout, c.Path)
}

// fileHolds reports whether the file at path holds token at or after
// offset from, and up to where a later call may start looking (the file's
// size less the token's length): a large capture is read once, not at
// every call.
func fileHolds(path string, from int64, token []byte) (bool, int64) {
	f, err := os.Open(path)
	if err != nil {
		return false, from
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<62))
	if err != nil {
		return false, from
	}
	if bytes.Contains(b, token) {
		return true, from
	}
	return false, max(from, from+int64(len(b))-int64(len(token)))
}
