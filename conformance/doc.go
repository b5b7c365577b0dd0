// Package conformance checks that a [backend.Backend] keeps the contract the
// syncer and the lock rely on. It is an ordinary package, not a _test one,
// so a store written outside this module can run the same checks as the
// stores inside it.
//
// The backend checks themselves live in package
// github.com/siltsync/silt/conformance/check, which does not import
// package testing: they report through its small T interface (which
// *testing.T satisfies), so RunBackend under `go test` and check.RunLive
// under `silt conformance` run the very same checks, and the silt binary
// does not link the test framework.
//
// # Running the suite against your store
//
// Add one test to your backend's package. The factory is called once per
// check and must return an empty backend: a fresh bucket, a fresh prefix in
// a shared bucket (see [backend.Prefixed]), or a new emulator.
//
//	package mystore_test
//
//	import (
//		"testing"
//
//		"github.com/siltsync/silt/backend"
//		"github.com/siltsync/silt/conformance"
//	)
//
//	func TestBackend_Conformance(t *testing.T) {
//		conformance.RunBackend(t, func(t *testing.T) backend.Backend {
//			b, err := mystore.New(t.Context(), mystore.Config{Bucket: newTestBucket(t)})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return b
//		})
//	}
//
// The suite closes each backend with t.Cleanup. A factory may call t.Skip,
// for example when the credentials of a cloud run are missing; it then skips
// every check, each with its own message. Run one check, or a group, with
// -run: go test -run 'TestBackend_Conformance/Put_IfAbsent_'.
//
// # What is checked
//
// Each check is a subtest named as a sentence, Verb_Condition_Outcome
// ("Put_IfAbsent_SixteenRacersOneWinner"), and runs on its own fresh
// backend, so no check depends on another's order or leftovers. The groups:
//
//   - Round trips: Put, Get, Stat and Delete agree on bytes, size and
//     version; an overwrite changes the version; missing keys are
//     [backend.ErrNotExist]; keys that trouble URLs, shells and sorting
//     round-trip; keys differing only in case or Unicode normalisation are
//     distinct objects.
//   - List: empty, nested and partial-segment prefixes; page sizes that do
//     and do not divide the count; strict ascending byte order with no
//     duplicate across pages; listed size and version equal Put's. Empty
//     pages are allowed anywhere, as some stores end with one.
//   - Versions and preconditions: GetOptions.IfMatch, Cond{IfAbsent},
//     Cond{IfMatch} on Put and on Delete, each with current, stale, wrong
//     and missing cases, concurrent races with exactly one winner, and a
//     16 x 20 optimistic-concurrency counter that must lose no update.
//   - Conditional reads: GetOptions.IfNoneMatch with the current version is
//     [backend.ErrNotModified] with no body and is not retryable; with a
//     stale version it returns the new object and version; on a missing
//     key it is [backend.ErrNotExist]. Every backend must honour it; no
//     capability gates it.
//   - Cancellation: a cancelled Put stores nothing partial; every verb fails
//     on a cancelled context with an error matching context.Canceled; a List
//     cancelled from its callback stops.
//   - Keys: every invalid key is [backend.ErrInvalidKey] from every verb,
//     before the body is touched; Put's size is honoured.
//
// # Capabilities
//
// A check that needs a guarantee the backend does not claim in
// [backend.Backend.Capabilities] calls t.Skip with a message naming the
// capability, never passes silently. The opposite checks
// (Put_IfMatch_NotSupportedWhenNotClaimed and its siblings) run only then,
// and require [backend.ErrNotSupported], because the syncer branches on
// capabilities and must never be surprised by a condition silently ignored.
//
// # Retries and timing
//
// The concurrent checks retry a write that fails with a retryable error (as
// backend.Retry would: S3 answers concurrent conditional writes with a
// retryable 409), and back off briefly between contended attempts. No check
// sleeps to order events: each outcome must hold for every schedule, and
// the suite passes under -race. Checks run sequentially, so a store's rate
// limits are not multiplied by the suite.
package conformance
