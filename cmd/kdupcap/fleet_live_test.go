package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// kgoClients counts the kgo clients of this process that are not closed:
// each runs one metadata loop.
func kgoClients() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "kgo.(*Client).updateMetadataLoop")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestLiveAttemptsClosedOnFailure: when live fails after its --attempts
// publisher started (pipeline.NewLive cannot make the --evidence
// directory), the publisher's client is closed, not left running. The
// evidence directory is checked first, then the publisher reads its SASL
// password from a named pipe: the test swaps the directory for a file
// while live waits on the pipe, so that NewLive, after, fails.
func TestLiveAttemptsClosedOnFailure(t *testing.T) {
	testenv.Root(t)
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "kdupcap-attempts"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dir := t.TempDir()
	evidence, fifo := filepath.Join(dir, "evidence"), filepath.Join(dir, "password")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	before := kgoClients()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	args := []string{"-i", "lo", "--port", strconv.Itoa(freePort(t)), "--evidence", evidence,
		"--attempts", "kafka://" + cl.ListenAddrs()[0] + "/kdupcap-attempts", "--host", "h",
		"--kafka-sasl", "plain", "--kafka-user", "u", "--kafka-password-file", fifo}
	go func() { done <- runLive(context.Background(), args, &stdout, &stderr) }()
	// Opens once live opens the pipe to read the password: by then the
	// evidence directory was checked.
	var w *os.File
	if !waitFor(10*time.Second, func() bool {
		w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil
	}) {
		t.Fatalf("live never read its password: %v: %s", err, stderr.String())
	}
	if err := os.Remove(evidence); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.WriteFile(evidence, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w.WriteString("secret\n")
	w.Close()
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("live did not return: %s", stderr.String())
	}
	if code != exitUsage || !strings.Contains(stderr.String(), "--evidence") {
		t.Fatalf("live exited %d, want %d with an --evidence error: %s", code, exitUsage, stderr.String())
	}
	if !waitFor(5*time.Second, func() bool { return kgoClients() == before }) {
		t.Errorf("%d kgo clients still open after live failed, %d before: the --attempts publisher was not closed", kgoClients(), before)
	}
}
