package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// TestLiveStops runs `kdupcap live` in a child process (this test binary,
// re-executed) and stops it the ways operators and scripts do: SIGINT,
// SIGTERM, --duration. Each time it must flush, print the summary and exit 0.
// While it runs, its IDs (read from /proc) are root's, or nobody's with
// --user nobody.
func TestLiveStops(t *testing.T) {
	if args := os.Getenv("KDUPCAP_LIVE_ARGS"); args != "" {
		os.Exit(run(strings.Fields(args), nil, os.Stdout, os.Stderr))
	}
	testenv.Root(t)
	port := freePort(t)
	tests := []struct {
		name   string
		args   string
		signal os.Signal
	}{
		{"SIGINT", "--format json", syscall.SIGINT},
		{"SIGTERM", "--format json", syscall.SIGTERM},
		{"duration", "--format json --duration 1s", nil},
		{"lines format, SIGTERM", "--format lines", syscall.SIGTERM},
		{"status lines", "--format json --stats-every 100ms --duration 1s", nil},
		{"drops root with --user", "--format json --user nobody", syscall.SIGTERM},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLiveStops$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("KDUPCAP_LIVE_ARGS=live -i lo --port %d --metrics 127.0.0.1:0 %s", port, tc.args))
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// "metrics on" is printed once the socket is open.
			if !waitFor(10*time.Second, func() bool { return strings.Contains(stderr.String(), "metrics on") }) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("live did not start: %s", stderr.String())
			}
			// The sinks open after the drop: the running child's real,
			// effective, saved and file-system IDs are the user's now,
			// and root's without --user.
			wantUID, wantGID := "0", "0"
			if strings.Contains(tc.args, "--user nobody") {
				u, err := user.Lookup("nobody")
				if err != nil {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal(err)
				}
				wantUID, wantGID = u.Uid, u.Gid
			}
			if uids, gids, err := procIDs(cmd.Process.Pid); err != nil {
				t.Errorf("reading the child's IDs: %v", err)
			} else if want := slices.Repeat([]string{wantUID}, 4); !slices.Equal(uids, want) {
				t.Errorf("child runs with uids %v, want %v", uids, want)
			} else if want := slices.Repeat([]string{wantGID}, 4); !slices.Equal(gids, want) {
				t.Errorf("child runs with gids %v, want %v", gids, want)
			}
			if tc.signal != nil {
				if err := cmd.Process.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("live did not stop: %s", stderr.String())
			}
			out := stdout.String()
			if strings.Contains(tc.args, "--stats-every") && !strings.Contains(stderr.String(), "packets ") {
				t.Errorf("no status line on stderr: %q", stderr.String())
			}
			if strings.Contains(tc.args, "json") {
				if !strings.Contains(out, `"type":"summary"`) || !strings.Contains(out, `"files":["live:lo"]`) {
					t.Errorf("no summary after the stop: %q", out)
				}
			} else if !strings.Contains(out, "live:lo") {
				t.Errorf("no summary after the stop: %q", out)
			}
		})
	}
}

// procIDs reads the real, effective, saved and file-system user and group
// IDs of process pid from /proc/PID/status.
func procIDs(pid int) (uids, gids []string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			uids = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Gid:"); ok {
			gids = strings.Fields(v)
		}
	}
	if len(uids) != 4 || len(gids) != 4 {
		return nil, nil, fmt.Errorf("/proc/%d/status: Uid %v, Gid %v", pid, uids, gids)
	}
	return uids, gids, nil
}

// TestSecondSignalKills: while a stopping run flushes (an emitter that
// cannot reach its cluster may take a while), a second SIGINT or SIGTERM
// must end the process at once, as the operator expects.
func TestSecondSignalKills(t *testing.T) {
	if os.Getenv("KDUPCAP_SECOND_SIGNAL") != "" {
		ctx, stop := stopContext(context.Background())
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("stopping")
		time.Sleep(20 * time.Second) // a flush that hangs
		os.Exit(0)
	}
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalKills$")
			cmd.Env = append(os.Environ(), "KDUPCAP_SECOND_SIGNAL=1")
			var stdout lockedBuffer
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if !waitFor(10*time.Second, func() bool { return strings.Contains(stdout.String(), "ready") }) {
				t.Fatal("child did not start")
			}
			cmd.Process.Signal(sig)
			if !waitFor(10*time.Second, func() bool { return strings.Contains(stdout.String(), "stopping") }) {
				t.Fatal("first signal did not stop the child")
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != -1 {
					t.Errorf("child ended with %v, want killed by %v", err, sig)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("second signal did not end the child")
			}
		})
	}
}
