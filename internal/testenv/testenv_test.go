package testenv

import (
	"runtime"
	"testing"
)

// TestCIHasEverything: under CI, the machine has every program and the
// privilege some test needs, so that none of them skips. It also stands for
// tests that still skip on their own (kafkatest.CanCapture's callers): a CI
// run without tcpdump fails here at least.
func TestCIHasEverything(t *testing.T) {
	if !CI() {
		t.Skip("CI not set: a developer's machine may lack these")
	}
	if runtime.GOOS != "linux" {
		t.Fatalf("CI runs on %s: the live and real-traffic tests need Linux", runtime.GOOS)
	}
	if err := CaptureErr(); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"tcpdump", "kcat", "tshark", "editcap", "setpriv", "openssl", "chromium"} {
		Tool(t, name)
	}
}

// fakeTB records how Unavailable ended the test; like testing's, its Skip
// and Fatal end the goroutine.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skip(...any)           { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) Fatal(...any)          { f.failed = true; runtime.Goexit() }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }

// ending runs fn on a fakeTB in its own goroutine and says how it ended.
func ending(t *testing.T, fn func(testing.TB)) (skipped, failed bool) {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.skipped, f.failed
}

func TestUnavailable(t *testing.T) {
	for _, ci := range []string{"", "true", "1"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			want := ci != ""
			skipped, failed := ending(t, func(tb testing.TB) { Unavailable(tb, "%s not installed", "nothing") })
			if failed != want || skipped == want {
				t.Errorf("CI=%q: failed %v skipped %v, want failed %v", ci, failed, skipped, want)
			}
			skipped, failed = ending(t, func(tb testing.TB) { Tool(tb, "kdupcap-no-such-program") })
			if failed != want || skipped == want {
				t.Errorf("CI=%q, missing program: failed %v skipped %v, want failed %v", ci, failed, skipped, want)
			}
			if skipped, failed = ending(t, func(tb testing.TB) { Tool(tb, "sh") }); skipped || failed {
				t.Errorf("CI=%q: sh is installed, yet skipped %v failed %v", ci, skipped, failed)
			}
		})
	}
}
