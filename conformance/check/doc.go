// Package check holds the backend conformance checks, independent of
// package testing: each [Check] reports through [T], which *testing.T
// satisfies. conformance.RunBackend runs them as subtests under `go test`;
// [RunLive] runs them from a program (`silt conformance`) against a live
// store. Both see the store through backend.Portable, as backend.Open
// returns it.
package check
