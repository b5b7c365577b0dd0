// Package archtest holds the test that keeps the module's import graph to
// the table in ARCHITECTURE.md. It has no code of its own: the test parses
// the table and compares it with what go list reports.
package archtest
