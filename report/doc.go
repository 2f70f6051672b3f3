// Package report writes findings and the run's summary for people and for
// scripts.
//
// # Place in the flow
//
// capture -> decode -> detect -> report. report takes detect.Finding values
// and a Summary (plain counts the CLI gathers from every stage) and gives
// text: human tables (NewTable, rendered with tablewriter) or JSON Lines
// (NewJSON, one object per line, a public contract described in the README).
// It imports detect only; it must never import capture or decode, so it knows
// findings, never how they were found.
//
// # Ownership and determinism
//
// A Writer reads what it is handed during the call and keeps nothing of it.
// Output depends on its input only: times are printed in UTC from the
// capture, never from the clock, and nothing is printed in map order, so the
// same findings give the same bytes (the golden tests rely on it).
//
// # Bad input
//
// Every value is printed as it is: an invalid address prints as "invalid
// AddrPort", a null client.id as null (JSON) or "(null)" (table). A Writer
// returns the first error of the io.Writer it writes to, wrapped.
package report
