package benchrun

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// CoreRoundTrip measures what a byte costs to cross from one CPU to another
// on this machine: two goroutines, each locked to an OS thread of its own,
// pass a counter on one cache line back and forth, spinning, rounds times,
// and the time of one round trip is the median of tries such runs. A split
// run (one goroutine reading, another decoding the bytes it read) pays this
// crossing for every line of bytes it hands on; two processes side by side
// do not. On a VM whose two CPUs share a cache it is some tens of
// nanoseconds; on one whose CPUs lie far apart, hundreds.
//
// It reports false when it could not measure: fewer than two CPUs to run
// on (GOMAXPROCS), or the two threads not both running within limit (a
// busy machine's scheduler puts them on one CPU).
func CoreRoundTrip(rounds, tries int, limit time.Duration) (time.Duration, bool) {
	if runtime.GOMAXPROCS(0) < 2 || rounds <= 0 || tries <= 0 {
		return 0, false
	}
	var times []time.Duration
	for range tries {
		d, ok := roundTrips(int64(rounds), time.Now().Add(limit))
		if !ok {
			return 0, false
		}
		times = append(times, d/time.Duration(rounds))
	}
	slices.Sort(times)
	return times[len(times)/2], true
}

// roundTrips passes the counter n times there and back, and reports how
// long that took, or false once deadline passed.
func roundTrips(n int64, deadline time.Time) (time.Duration, bool) {
	var (
		line   atomic.Int64 // odd: the other's turn; even: ours
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	// wait spins until line holds want, looking at the clock now and then;
	// false once the deadline passed or the other side gave up.
	wait := func(want int64) bool {
		for spins := 0; line.Load() != want; spins++ {
			if spins&0xfff == 0xfff && (failed.Load() || time.Now().After(deadline)) {
				failed.Store(true)
				return false
			}
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := int64(1); i <= n; i++ {
			if !wait(2*i - 1) {
				return
			}
			line.Store(2 * i)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for i := int64(1); i <= n; i++ {
		line.Store(2*i - 1)
		if !wait(2 * i) {
			break
		}
	}
	took := time.Since(start)
	wg.Wait()
	return took, !failed.Load()
}
