package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestLiveEndsSinks: a run stopped by --duration (not by a signal) closes
// its metrics endpoint before it returns, and a run whose emitter could
// not deliver its records (an emit cluster that is not there) exits 1 with
// one line saying so, as for any output that failed.
func TestLiveEndsSinks(t *testing.T) {
	testenv.Root(t)
	port := freePort(t)
	metricsPort := freePort(t)
	deadEmit := freePort(t) // nothing listens there
	tests := []struct {
		name     string
		extra    string
		wantCode int
		wantErr  string
	}{
		{"metrics", "", exitOK, ""},
		{"emit cluster down", fmt.Sprintf("--emit kafka://127.0.0.1:%d/findings", deadEmit), exitFailure, "--emit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := strings.Fields(fmt.Sprintf("-i lo --port %d --duration 300ms --metrics 127.0.0.1:%d %s", port, metricsPort, tc.extra))
			var stdout, stderr lockedBuffer
			code := runLive(context.Background(), args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if tc.wantErr != "" && !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr does not mention %s:\n%s", tc.wantErr, stderr.String())
			}
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", metricsPort), time.Second)
			if err == nil {
				c.Close()
				t.Errorf("metrics endpoint still served after the run returned")
			}
		})
	}
}
