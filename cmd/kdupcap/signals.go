package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// stopContext is done at the first SIGINT or SIGTERM, with the signal as
// its cause (stoppedBy); the signals then get their default action back,
// so that a second one ends the process while the first one's flush is
// still running (a hung emitter, a slow disk, a long decision).
func stopContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		var cause error = context.Canceled
		select {
		case sig := <-sigs:
			cause = signalCause{sig}
		case <-ctx.Done():
		}
		// The default action is back before the run can see it must stop,
		// so a second signal during the flush is never swallowed.
		signal.Stop(sigs)
		cancel(cause)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(context.Canceled)
	}
}

// signalCause is a stopContext's cause: the signal that stopped the run.
type signalCause struct{ sig os.Signal }

func (s signalCause) Error() string { return "stopped by " + signalName(s.sig) }

// stoppedBy returns the signal that ended ctx, nil if none did.
func stoppedBy(ctx context.Context) os.Signal {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		return sc.sig
	}
	return nil
}

// signalName is "SIGINT" or "SIGTERM".
func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// signalExit is the exit code of a run a signal stopped: 128 and the
// signal's number, as a shell reports it (130 for SIGINT, 143 for SIGTERM).
func signalExit(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}
