package check

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/siltsync/silt/backend"
)

// createChecks cover Cond{IfAbsent}, which the lock and control plane build
// on.
var createChecks = []Check{
	{"Put_IfAbsent_CreatesMissingKey", checkCreateMissing},
	{"Put_IfAbsent_SecondCreateFailsAndKeepsFirst", checkCreateTwice},
	{"Put_IfAbsent_SixteenRacersOneWinner", checkCreateRace},
	{"Put_IfAbsent_NotSupportedWhenNotClaimed", checkCreateUnsupported},
}

// casChecks cover Cond{IfMatch} on Put, which the index commit builds on.
var casChecks = []Check{
	{"Put_IfMatchCurrentVersion_ReplacesAndReturnsNewVersion", checkCASCurrent},
	{"Put_IfMatchWrongVersion_FailsAndKeepsObject", checkCASWrong},
	{"Put_IfMatchStaleVersion_FailsAndKeepsObject", checkCASStale},
	{"Put_IfMatchMissingKey_IsErrPrecondition", checkCASMissing},
	{"Put_IfMatch_SixteenRacersOneWinner", checkCASRace},
	{"Put_IfMatch_SixteenWorkersTwentyIncrementsLoseNoUpdate", checkCASCounter},
	{"Put_IfMatch_NotSupportedWhenNotClaimed", checkCASUnsupported},
}

// deleteChecks cover Cond{IfMatch} on Delete, which releases a lock only if
// it is still ours.
var deleteChecks = []Check{
	{"Delete_IfMatchCurrentVersion_Deletes", checkCondDeleteCurrent},
	{"Delete_IfMatchWrongVersion_FailsAndKeepsObject", checkCondDeleteWrong},
	{"Delete_IfMatchMissingKey_IsErrPrecondition", checkCondDeleteMissing},
	{"Delete_IfMatch_NotSupportedWhenNotClaimed", checkCondDeleteUnsupported},
}

// racers is how many goroutines contend for one key in the race checks.
const racers = 16

func checkCreateMissing(t T, b backend.Backend) {
	needCreate(t, b)
	data := body("create", 64)
	info, err := backend.PutBytes(t.Context(), b, "lock", data, backend.Cond{IfAbsent: true})
	if err != nil {
		t.Fatalf("Put(IfAbsent) of a missing key: %v", err)
	}
	checkInfo(t, "Put(IfAbsent)", "lock", info, int64(len(data)))
	wantObject(t, b, "lock", data, info.Version)
}

func checkCreateTwice(t T, b backend.Backend) {
	needCreate(t, b)
	first := body("create-first", 64)
	info, err := backend.PutBytes(t.Context(), b, "lock", first, backend.Cond{IfAbsent: true})
	if err != nil {
		t.Fatalf("first Put(IfAbsent): %v", err)
	}
	_, err = backend.PutBytes(t.Context(), b, "lock", body("create-second", 64), backend.Cond{IfAbsent: true})
	wantIs(t, "second Put(IfAbsent)", err, backend.ErrPrecondition)
	if backend.IsRetryable(err) {
		t.Errorf("second Put(IfAbsent): err = %v is retryable; a failed precondition never is", err)
	}
	wantObject(t, b, "lock", first, info.Version)

	// An object written without a condition counts as present too.
	plain := put(t, b, "plain", body("plain", 8))
	_, err = backend.PutBytes(t.Context(), b, "plain", body("plain-create", 8), backend.Cond{IfAbsent: true})
	wantIs(t, "Put(IfAbsent) over an unconditional write", err, backend.ErrPrecondition)
	wantObject(t, b, "plain", body("plain", 8), plain.Version)
}

// raceResult is what one racer saw.
type raceResult struct {
	data []byte
	info backend.ObjectInfo
	err  error
}

// race runs racers concurrent Puts of distinct bodies to key under cond,
// released together, and returns each racer's outcome.
func race(t T, b backend.Backend, key string, cond backend.Cond) []raceResult {
	t.Helper()
	results := make([]raceResult, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		results[i].data = body(fmt.Sprintf("racer %d for %q", i, key), 256)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			<-start
			results[i].info, results[i].err = putRetrying(t.Context(), b, key, results[i].data, cond, rng)
		})
	}
	close(start)
	wg.Wait()
	return results
}

// oneWinner checks that exactly one racer succeeded, that every other one
// failed its precondition, and that the stored object is the winner's.
func oneWinner(t T, b backend.Backend, key string, results []raceResult) {
	t.Helper()
	winner := -1
	for i, r := range results {
		switch {
		case r.err == nil && winner >= 0:
			t.Errorf("racers %d and %d both succeeded", winner, i)
		case r.err == nil:
			winner = i
		case !errors.Is(r.err, backend.ErrPrecondition):
			t.Errorf("racer %d: err = %v, want success or ErrPrecondition", i, r.err)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d racers succeeded", len(results))
	}
	w := results[winner]
	checkInfo(t, "winning Put", key, w.info, int64(len(w.data)))
	wantObject(t, b, key, w.data, w.info.Version)
}

func checkCreateRace(t T, b backend.Backend) {
	needCreate(t, b)
	oneWinner(t, b, "lock", race(t, b, "lock", backend.Cond{IfAbsent: true}))
}

func checkCreateUnsupported(t T, b backend.Backend) {
	if c := b.Capabilities(); c.AtomicCreate || c.ConditionalPut {
		t.Skip("backend claims Capabilities().AtomicCreate or ConditionalPut; Put_IfAbsent_* checks cover it")
	}
	_, err := backend.PutBytes(t.Context(), b, "lock", body("create", 8), backend.Cond{IfAbsent: true})
	wantIs(t, "Put(IfAbsent) on a backend without create-if-absent", err, backend.ErrNotSupported)
	wantAbsent(t, b, "lock")
}

func checkCASCurrent(t T, b backend.Backend) {
	needConditionalPut(t, b)
	old := put(t, b, "manifest", body("cas-old", 100))
	data := body("cas-new", 120)
	info, err := backend.PutBytes(t.Context(), b, "manifest", data, backend.Cond{IfMatch: old.Version})
	if err != nil {
		t.Fatalf("Put(IfMatch: current version): %v", err)
	}
	checkInfo(t, "Put(IfMatch)", "manifest", info, int64(len(data)))
	if info.Version == old.Version {
		t.Errorf("Put(IfMatch) returned the version it replaced, %q", old.Version)
	}
	wantObject(t, b, "manifest", data, info.Version)

	// The returned version is usable as the next condition, without a
	// read in between: that is how a committer chains its writes.
	next := body("cas-next", 80)
	info2, err := backend.PutBytes(t.Context(), b, "manifest", next, backend.Cond{IfMatch: info.Version})
	if err != nil {
		t.Fatalf("Put(IfMatch: version returned by the previous Put): %v", err)
	}
	wantObject(t, b, "manifest", next, info2.Version)
}

// wrongVersion returns a real version of another object with other content:
// a token the backend can parse, which must still not match key.
func wrongVersion(t T, b backend.Backend) backend.Version {
	t.Helper()
	return put(t, b, "other-object", body("other-object", 100)).Version
}

func checkCASWrong(t T, b backend.Backend) {
	needConditionalPut(t, b)
	data := body("cas-keep", 100)
	cur := put(t, b, "manifest", data)
	wrong := wrongVersion(t, b)
	if wrong == cur.Version {
		t.Fatalf("two objects with different content share version %q", wrong)
	}
	_, err := backend.PutBytes(t.Context(), b, "manifest", body("cas-lose", 100), backend.Cond{IfMatch: wrong})
	wantIs(t, "Put(IfMatch: another object's version)", err, backend.ErrPrecondition)
	wantObject(t, b, "manifest", data, cur.Version)
}

func checkCASStale(t T, b backend.Backend) {
	needConditionalPut(t, b)
	stale := put(t, b, "manifest", body("cas-stale-1", 100))
	data := body("cas-stale-2", 100)
	cur := put(t, b, "manifest", data)
	_, err := backend.PutBytes(t.Context(), b, "manifest", body("cas-stale-3", 100), backend.Cond{IfMatch: stale.Version})
	wantIs(t, "Put(IfMatch: stale version)", err, backend.ErrPrecondition)
	if backend.IsRetryable(err) {
		t.Errorf("Put(IfMatch: stale version): err = %v is retryable; a failed precondition never is", err)
	}
	wantObject(t, b, "manifest", data, cur.Version)
}

func checkCASMissing(t T, b backend.Backend) {
	needConditionalPut(t, b)
	gone := put(t, b, "manifest", body("cas-gone", 10))
	if err := b.Delete(t.Context(), "manifest", backend.Cond{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	// S3 answers 404 here; the backend must still say ErrPrecondition,
	// because the caller's question was "is it still at this version?".
	_, err := backend.PutBytes(t.Context(), b, "manifest", body("cas-recreate", 10), backend.Cond{IfMatch: gone.Version})
	wantIs(t, "Put(IfMatch) of a deleted key", err, backend.ErrPrecondition)
	wantAbsent(t, b, "manifest")
}

func checkCASRace(t T, b backend.Backend) {
	needConditionalPut(t, b)
	base := put(t, b, "manifest", body("cas-race-base", 256))
	oneWinner(t, b, "manifest", race(t, b, "manifest", backend.Cond{IfMatch: base.Version}))
}

// Counter stress sizes: every run, short or not, so that a lost update has
// 320 chances to show.
const (
	counterWorkers    = 16
	counterIncrements = 20
	// counterAttempts bounds one increment's retries, so a backend whose
	// conditional Put never succeeds fails the check instead of hanging.
	counterAttempts = 10_000
)

// checkCASCounter is the optimistic-concurrency loop every committer runs:
// read the value with its version, write value+1 if still at that version,
// on ErrPrecondition read again. Each successful write must have read the
// value the previous successful write stored, so the values written are
// exactly 1..320, each once, and the final value is 320.
func checkCASCounter(t T, b backend.Backend) {
	needConditionalPut(t, b)
	const key = "counter"
	put(t, b, key, []byte("0"))

	var mu sync.Mutex
	written := map[int]int{} // value -> successful writes of it
	errs := make(chan error, counterWorkers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range counterWorkers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			<-start
			for range counterIncrements {
				n, err := increment(t, b, key, rng)
				if err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
				mu.Lock()
				written[n]++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	const total = counterWorkers * counterIncrements
	for n := 1; n <= total; n++ {
		if c := written[n]; c != 1 {
			t.Errorf("value %d was written by %d successful Put(IfMatch) calls, want 1", n, c)
		}
	}
	data, _, err := get(t.Context(), b, key, backend.GetOptions{})
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if string(data) != strconv.Itoa(total) {
		t.Errorf("counter = %q after %d workers x %d increments, want %d", data, counterWorkers, counterIncrements, total)
	}
}

// increment adds one to the counter under key and returns the value it
// wrote. A retryable error is treated like a lost race (re-read, try again):
// S3's 409 ConditionalRequestConflict means the write was not applied.
func increment(t T, b backend.Backend, key string, rng *rand.Rand) (int, error) {
	ctx := t.Context()
	for attempt := 1; attempt <= counterAttempts; attempt++ {
		if attempt > 1 {
			backoff(rng, attempt-1)
		}
		data, info, err := get(ctx, b, key, backend.GetOptions{})
		if backend.IsRetryable(err) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("get: %w", err)
		}
		n, err := strconv.Atoi(string(data))
		if err != nil {
			return 0, fmt.Errorf("counter holds %s, not a number: a write was torn or mixed", describe(data))
		}
		_, err = backend.PutBytes(ctx, b, key, []byte(strconv.Itoa(n+1)), backend.Cond{IfMatch: info.Version})
		switch {
		case err == nil:
			return n + 1, nil
		case errors.Is(err, backend.ErrPrecondition), backend.IsRetryable(err):
			continue
		default:
			return 0, fmt.Errorf("Put(IfMatch): %w", err)
		}
	}
	return 0, fmt.Errorf("no increment succeeded in %d attempts", counterAttempts)
}

func checkCASUnsupported(t T, b backend.Backend) {
	if b.Capabilities().ConditionalPut {
		t.Skip("backend claims Capabilities().ConditionalPut; Put_IfMatch* checks cover it")
	}
	data := body("no-cas", 10)
	cur := put(t, b, "manifest", data)
	_, err := backend.PutBytes(t.Context(), b, "manifest", body("no-cas-2", 10), backend.Cond{IfMatch: cur.Version})
	wantIs(t, "Put(IfMatch) on a backend without ConditionalPut", err, backend.ErrNotSupported)
	wantObject(t, b, "manifest", data, cur.Version)
}

func checkCondDeleteCurrent(t T, b backend.Backend) {
	needConditionalDelete(t, b)
	cur := put(t, b, "lock", body("del-current", 10))
	if err := b.Delete(t.Context(), "lock", backend.Cond{IfMatch: cur.Version}); err != nil {
		t.Fatalf("Delete(IfMatch: current version): %v", err)
	}
	wantAbsent(t, b, "lock")
}

func checkCondDeleteWrong(t T, b backend.Backend) {
	needConditionalDelete(t, b)
	stale := put(t, b, "lock", body("del-stale", 10))
	data := body("del-keep", 10)
	cur := put(t, b, "lock", data)
	err := b.Delete(t.Context(), "lock", backend.Cond{IfMatch: wrongVersion(t, b)})
	wantIs(t, "Delete(IfMatch: another object's version)", err, backend.ErrPrecondition)
	err = b.Delete(t.Context(), "lock", backend.Cond{IfMatch: stale.Version})
	wantIs(t, "Delete(IfMatch: stale version)", err, backend.ErrPrecondition)
	wantObject(t, b, "lock", data, cur.Version)
}

func checkCondDeleteMissing(t T, b backend.Backend) {
	needConditionalDelete(t, b)
	gone := put(t, b, "lock", body("del-gone", 10))
	if err := b.Delete(t.Context(), "lock", backend.Cond{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	err := b.Delete(t.Context(), "lock", backend.Cond{IfMatch: gone.Version})
	wantIs(t, "Delete(IfMatch) of a missing key", err, backend.ErrPrecondition)
}

func checkCondDeleteUnsupported(t T, b backend.Backend) {
	if b.Capabilities().ConditionalDelete {
		t.Skip("backend claims Capabilities().ConditionalDelete; Delete_IfMatch* checks cover it")
	}
	data := body("no-cond-delete", 10)
	cur := put(t, b, "lock", data)
	err := b.Delete(t.Context(), "lock", backend.Cond{IfMatch: cur.Version})
	wantIs(t, "Delete(IfMatch) on a backend without ConditionalDelete", err, backend.ErrNotSupported)
	wantObject(t, b, "lock", data, cur.Version)
}
