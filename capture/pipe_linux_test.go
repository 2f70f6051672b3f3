package capture

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

// pipeSize is the buffer of the pipe f, or -1.
func pipeSize(f *os.File) int {
	size := -1
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) {
			if n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil {
				size = n
			}
		})
	}
	return size
}

// TestNewFileSourcePipe: a pipe read by NewFileSource is grown to
// pipeBytes, never shrunk from more, of unknown size, and read whole.
func TestNewFileSourcePipe(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && max < pipeBytes && os.Geteuid() != 0 {
			t.Skipf("pipes here grow to %d bytes at most", max)
		}
	}
	for _, before := range []int{0, 2 * pipeBytes} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if before > 0 {
			if c, err := w.SyscallConn(); err == nil {
				c.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, before) })
			}
			if pipeSize(r) != before {
				r.Close()
				w.Close()
				t.Logf("a pipe of %d bytes is not allowed here (pipe-max-size, no CAP_SYS_RESOURCE): not shrinking it is not checked", before)
				continue
			}
		}
		pkts := testPackets(t)
		file := pcapFile(binary.LittleEndian, false, layers.LinkTypeRaw, pkts)
		go func() {
			w.Write(file)
			w.Close()
		}()
		s, err := NewFileSource("pipe", r)
		if err != nil {
			t.Fatal(err)
		}
		want := max(before, pipeBytes)
		if size := pipeSize(r); size != want || s.Size() != -1 {
			t.Errorf("a pipe of %d bytes before: %d after, Size %d; want %d, -1", before, size, s.Size(), want)
		}
		got, err := readAll(s)
		if err != nil {
			t.Fatal(err)
		}
		samePackets(t, got, pkts, false)
		s.Close()
		r.Close()
	}
}
