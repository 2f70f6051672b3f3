// Package testenv says whether what a test needs from the machine is there: a
// program on PATH (tcpdump, kcat, tshark, setpriv, chromium), root, both for
// a capture on loopback. A test that lacks one is skipped on a developer's
// machine, but fails when the CI environment variable is set (non-empty, as
// CI services set it): a CI run must not report ok with the real-traffic
// tests skipped.
// .ci/run installs every program listed here.
//
// # Place in the flow
//
// testenv sits beside the flow (capture -> decode -> detect -> profile ->
// report -> pipeline -> cmd/kdupcap): any test package, and
// internal/kafkatest, may import it. It imports only the standard library and
// must never import capture, decode, detect, profile, report, pipeline or any
// other package of kdupcap's, so that capture's and decode's own tests can
// use it.
//
// # What it takes and gives
//
// [Tool], [Root] and [Capture] take a testing.TB and end it through
// [Unavailable] (t.Skip, or t.Fatal under [CI]) when the machine lacks what
// they check; [RootErr] and [CaptureErr] give the reason as an error, for
// callers that are not tests. It holds no bytes, no state and no bounds: each
// call reads PATH, the effective user ID and the environment as they are
// then.
//
// # Files
//
//   - testenv.go: CI, Unavailable, Tool, Root, Capture, RootErr and CaptureErr.
package testenv
