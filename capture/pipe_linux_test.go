package capture

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/sys/unix"
)

// TestNewFileSourcePipe: a pipe read by NewFileSource is grown to
// pipeBytes, of unknown size, and read whole.
func TestNewFileSourcePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
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
	defer s.Close()
	size := 0
	if c, err := r.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) { size, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	}
	if size != pipeBytes || s.Size() != -1 {
		t.Errorf("pipe of %d bytes, Size %d; want %d, -1", size, s.Size(), pipeBytes)
	}
	got, err := readAll(s)
	if err != nil {
		t.Fatal(err)
	}
	samePackets(t, got, pkts, false)
}
