//go:build !linux

package kafkatest

import (
	"net"
	"time"
)

// waitSent gives the peer a moment to receive what was written to c: the
// send queue cannot be read here (see sent_linux.go).
func waitSent(_ *net.TCPConn, timeout time.Duration) {
	time.Sleep(min(timeout, 20*time.Millisecond))
}
