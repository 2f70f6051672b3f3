package live_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/kdupcap/kdupcap/capture"
	"github.com/kdupcap/kdupcap/capture/live"
)

// A capture loop: open, drop root, feed the Assembler, do periodic work
// when no packet comes, stop when the context ends.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()

	src, err := live.Open(live.Options{Interface: "lo", Ports: []uint16{9092}})
	var pe *live.PermissionError
	if errors.As(err, &pe) {
		fmt.Fprintln(os.Stderr, err) // the CLI exits 2
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer src.Close()
	if err := live.DropPrivileges("nobody"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}

	asm := capture.NewAssembler(func(a, b netip.AddrPort, ts time.Time) capture.Stream {
		return nil // the Kafka decoder's stream in kdupcap
	}, capture.AssemblerOptions{})
	defer asm.Close()
	for ctx.Err() == nil {
		p, err := src.Next()
		switch {
		case errors.Is(err, live.ErrTimeout):
			st := src.Stats()
			_ = st.Drops // status line, metrics
			continue
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return
		}
		asm.Add(p)
	}
}
