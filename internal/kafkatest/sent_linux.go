package kafkatest

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// siocoutqnsd is Linux's SIOCOUTQNSD: the bytes of a TCP socket's send
// queue not sent yet.
const siocoutqnsd = 0x894B

// waitSent waits, at most timeout, until every byte written to c has been
// sent (SIOCOUTQNSD is 0): on loopback a sent segment has passed the
// capture point and reached the peer's receive queue, so an RST sent after
// it comes after it on the wire. It does not wait for the peer's
// acknowledgement, which Linux may delay by tens of milliseconds.
func waitSent(c *net.TCPConn, timeout time.Duration) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(timeout)
	for {
		var unsent int32
		var errno syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, siocoutqnsd, uintptr(unsafe.Pointer(&unsent)))
		}); err != nil || errno != 0 || unsent == 0 || !time.Now().Before(deadline) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}
