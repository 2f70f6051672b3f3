package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestAnalyzeSignals runs `kdupcap analyze -` in a child process (this test
// binary, re-executed) fed a whole capture through a pipe that stays open,
// as `tcpdump ... | kdupcap analyze -` is, and stops it with SIGINT or
// SIGTERM once it has read the capture (its read bytes, from /proc, are
// the file's): it must decide what it read, print the findings the
// capture's log calls for and a summary marked interrupted, and exit
// 130 or 143.
func TestAnalyzeSignals(t *testing.T) {
	if args := os.Getenv("KDUPCAP_ANALYZE_ARGS"); args != "" {
		os.Exit(run(strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
	}
	file := seedPath("kcat-nonidempotent-timeout.pcap")
	capBytes, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sig      syscall.Signal
		name     string
		wantCode int
	}{
		{syscall.SIGINT, "SIGINT", exitSIGINT},
		{syscall.SIGTERM, "SIGTERM", exitSIGTERM},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestAnalyzeSignals$")
			cmd.Env = append(os.Environ(), "KDUPCAP_ANALYZE_ARGS=analyze --format json -")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			if _, err := stdin.Write(capBytes); err != nil {
				t.Fatal(err)
			}
			// Readiness: the pipe is empty and the child has read at least
			// as many bytes as were written.
			w := stdin.(*os.File)
			if !waitFor(10*time.Second, func() bool {
				return pipeQueued(w) == 0 && readBytes(cmd.Process.Pid) >= int64(len(capBytes))
			}) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("analyze did not read the capture: %s", stderr.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("analyze did not stop on %s", tc.name)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			out := parseJSONLines(t, strings.NewReader(stdout.String()))
			// The capture's log (testdata/README.md): two batches held
			// twice, 0xaf65e89b at offsets 2 and 4, 0xc6aab9a9 at 5 and 7.
			want := map[string][]int64{"0xaf65e89b": {2, 4}, "0xc6aab9a9": {5, 7}}
			if len(out.Findings) != len(want) {
				t.Fatalf("%d findings, the log holds %d batches twice", len(out.Findings), len(want))
			}
			for _, f := range out.Findings {
				if w, ok := want[f.BatchCRC]; !ok || f.Verdict != "duplicated" || !slices.Equal(f.AppendedOffsets, w) {
					t.Errorf("finding crc %s %s at %v, want one of %v duplicated", f.BatchCRC, f.Verdict, f.AppendedOffsets, want)
				}
			}
			if !strings.Contains(stdout.String(), `"interrupted":"`+tc.name+`"`) {
				t.Errorf("the summary is not marked interrupted by %s", tc.name)
			}
			if !strings.Contains(stderr.String(), tc.name+": stopped reading") {
				t.Errorf("stderr does not say why it stopped: %s", stderr.String())
			}
		})
	}
}

// pipeQueued is the bytes written to the pipe of w and not read yet
// (FIONREAD), -1 if unknown.
func pipeQueued(w *os.File) int {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, w.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return -1
	}
	return int(n)
}

// readBytes is the bytes process pid has read (rchar of /proc/PID/io),
// -1 if unknown.
func readBytes(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}
