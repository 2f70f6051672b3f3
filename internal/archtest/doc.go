// Package archtest holds the test that keeps kdupcap's architecture visible
// in its imports: data flows one way,
//
//	capture -> decode -> detect -> profile -> report -> pipeline -> cmd/kdupcap
//
// and each package knows only the ones before it. The test reads the imports
// with `go list` and fails when a package imports one it must not, or when
// its doc.go no longer says so. It has no code of its own.
//
// # What it takes and gives
//
// It takes the module's packages as `go list -json ./...` gives them, run
// from the module root, and gives test failures: [TestImports] fails when a
// stage depends, directly or at any depth, on a package its rule forbids, or
// when any package but the command's tests imports cmd/kdupcap;
// [TestDocsSayIt] fails when a stage's doc.go has no sentence saying what it
// must never import, or when that sentence leaves out a package the rule
// names. The rules and the doc.go sentences are one statement: a change to a
// boundary changes both.
//
// # Imports
//
// It sits beside the flow and imports only the standard library; it must
// never import a package of the module, since it judges them all by what `go
// list` says of them, not by their code.
//
// # Bad input and bounds
//
// A rule naming a package that `go list` does not list fails, so a renamed or
// removed package cannot leave its rule silently unchecked. `go list` failing
// fails the test with its stderr. It holds nothing beyond one listing of the
// module per test.
//
// # Files
//
//   - arch_test.go: the rules, TestImports and TestDocsSayIt (doc.go holds only
//     this comment).
package archtest
