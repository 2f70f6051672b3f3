// Package archtest holds the test that keeps kdupcap's architecture
// visible in its imports: data flows one way,
//
//	capture -> decode -> detect -> profile -> report -> pipeline -> cmd/kdupcap
//
// and each package knows only the ones before it. The test reads the
// imports with `go list` and fails when a package imports one it must not,
// or when its doc.go no longer says so. It has no code of its own.
package archtest
