package kafkatest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Capture is a running tcpdump writing the loopback traffic of one port to a
// pcap file.
type Capture struct {
	Path string

	cmd  *exec.Cmd
	done chan struct{} // closed when stderr is drained

	mu     sync.Mutex
	stderr strings.Builder
}

// CaptureStats is what tcpdump reported when it stopped.
type CaptureStats struct {
	Captured, ReceivedByFilter, DroppedByKernel int
}

// CanCapture says why StartCapture cannot work here, or nil: tcpdump must be
// on PATH and the process must be root.
func CanCapture() error {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		return fmt.Errorf("kafkatest: tcpdump not found: %w", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("kafkatest: capturing on lo needs root")
	}
	return nil
}

// StartCapture starts tcpdump on lo for TCP port port, writing path, and
// returns once tcpdump says it is listening (or fails within ctx).
func StartCapture(ctx context.Context, path string, port int) (*Capture, error) {
	// -Z root: Debian's tcpdump otherwise drops to user tcpdump before
	// opening the file, which then cannot be written in a root-only TempDir.
	cmd := exec.Command("tcpdump", "-i", "lo", "-s", "0", "-B", "65536", "-U", "--immediate-mode",
		"-Z", "root", "-w", path, fmt.Sprintf("tcp port %d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("kafkatest: tcpdump: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kafkatest: start tcpdump: %w", err)
	}
	c := &Capture{Path: path, cmd: cmd, done: make(chan struct{})}
	listening := make(chan struct{})
	go c.drain(stderr, listening)

	select {
	case <-listening:
		return c, nil
	case <-c.done:
		_ = cmd.Wait()
		return nil, fmt.Errorf("kafkatest: tcpdump exited before listening: %s", c.Stderr())
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-c.done
		_ = cmd.Wait()
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

// Stderr is what tcpdump printed so far.
func (c *Capture) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

var statLine = regexp.MustCompile(`(\d+) packets? (captured|received by filter|dropped by kernel)`)

// quiet is how long the capture file must not grow before Stop signals
// tcpdump: packets still in the kernel's buffer when tcpdump stops are lost
// without being counted as dropped.
const quiet = 300 * time.Millisecond

// Stop waits until the capture file has stopped growing (tcpdump has caught
// up with the traffic, at most timeout), stops tcpdump with SIGINT (SIGKILL if
// it has not exited within timeout), waits for it and returns its counts.
// Packets dropped by the kernel, or left unread, are an error: the capture is
// then not the whole truth.
func (c *Capture) Stop(timeout time.Duration) (CaptureStats, error) {
	var st CaptureStats
	c.waitQuiet(timeout)
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
	if !strings.Contains(out, "dropped by kernel") {
		return st, fmt.Errorf("kafkatest: tcpdump stopped without its counts (%v): %s", waitErr, out)
	}
	if st.DroppedByKernel != 0 {
		return st, fmt.Errorf("kafkatest: tcpdump: %d packets dropped by kernel, capture %s incomplete", st.DroppedByKernel, c.Path)
	}
	// On lo the filter sees every packet at most twice (sent and
	// received); more than twice the packets captured means some were still
	// unread when tcpdump stopped.
	if st.ReceivedByFilter > 2*st.Captured {
		return st, fmt.Errorf("kafkatest: tcpdump: %d packets received by filter, only %d captured: capture %s incomplete", st.ReceivedByFilter, st.Captured, c.Path)
	}
	return st, nil
}

// waitQuiet returns once the capture file has not grown for quiet, or after
// timeout.
func (c *Capture) waitQuiet(timeout time.Duration) {
	const poll = 25 * time.Millisecond
	deadline := time.Now().Add(timeout)
	last, since := int64(-1), time.Now()
	for time.Now().Before(deadline) {
		var size int64
		if fi, err := os.Stat(c.Path); err == nil {
			size = fi.Size()
		}
		if size != last {
			last, since = size, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
		time.Sleep(poll)
	}
}
