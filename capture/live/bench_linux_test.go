//go:build linux

package live

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/capture"
)

// genLimit bounds the load generator of a benchmark run, whatever b.N.
const genLimit = 60 * time.Second

// BenchmarkLiveLoopback reads packets from the ring on the loopback while a
// goroutine writes 512-byte messages on a local TCP connection as fast as
// it can; "assemble" also hands each packet to capture's Assembler. It
// reports packets/s read and the kernel's drops during the run (the ring
// is the default 64 MiB).
func BenchmarkLiveLoopback(b *testing.B) {
	requireRoot(b)
	b.Run("ring", func(b *testing.B) { benchLoopback(b, false) })
	b.Run("assemble", func(b *testing.B) { benchLoopback(b, true) })
}

type discard struct{}

func (discard) Data(bool, []byte, time.Time) bool { return true }
func (discard) Gap(bool, int, time.Time)          {}
func (discard) Close(time.Time)                   {}

func benchLoopback(b *testing.B, assemble bool) {
	ln, port := listen(b)
	src, err := Open(Options{Interface: loopbackName(b), Ports: []uint16{port}})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()

	stop := make(chan struct{})
	genDone := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(io.Discard, c)
	}()
	go func() {
		defer close(genDone)
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		c.(*net.TCPConn).SetNoDelay(true)
		msg := make([]byte, 512)
		for end := time.Now().Add(genLimit); time.Now().Before(end); {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(msg); err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-genDone
	}()

	var asm *capture.Assembler
	if assemble {
		asm = capture.NewAssembler(func(netip.AddrPort, netip.AddrPort, time.Time) capture.Stream { return discard{} }, capture.AssemblerOptions{})
	}
	before := src.Stats()
	var bytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		p, err := src.Next()
		if errors.Is(err, ErrTimeout) {
			select {
			case <-genDone:
				b.Fatalf("load generator stopped after %d packets", i)
			default:
			}
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(p.Data))
		if asm != nil {
			asm.Add(p)
		}
		i++
	}
	b.StopTimer()
	after := src.Stats()
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	b.ReportMetric(float64(after.Drops-before.Drops), "drops")
	b.ReportMetric(float64(after.QueueFreezes-before.QueueFreezes), "freezes")
}
