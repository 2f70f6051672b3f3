package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI says whether the tests run under CI, where nothing may be skipped for
// want of a program or a privilege.
func CI() bool { return os.Getenv("CI") != "" }

// Unavailable ends t for want of something the machine lacks: t.Skip, or
// t.Fatal under CI.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI=%q: a missing program or privilege fails the test)", msg, os.Getenv("CI"))
	}
	t.Skip(msg)
}

// Tool returns the path of the program name, or ends t (see Unavailable)
// when it is not on PATH.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, "%s not installed: %v", name, err)
	}
	return path
}

// Root ends t (see Unavailable) unless the process runs as root.
func Root(t testing.TB) {
	t.Helper()
	if err := RootErr(); err != nil {
		Unavailable(t, "%v", err)
	}
}

// Capture ends t (see Unavailable) unless a capture on loopback with
// tcpdump is possible: tcpdump on PATH, root.
func Capture(t testing.TB) {
	t.Helper()
	if err := CaptureErr(); err != nil {
		Unavailable(t, "%v", err)
	}
}

// RootErr says why the process is not root, or nil.
func RootErr() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("needs root, running as user %d", uid)
	}
	return nil
}

// CaptureErr says why tcpdump cannot capture loopback here, or nil.
func CaptureErr() error {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		return fmt.Errorf("tcpdump not found: %w", err)
	}
	if err := RootErr(); err != nil {
		return errors.New("capturing on lo " + err.Error())
	}
	return nil
}
