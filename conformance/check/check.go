package check

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
)

// T is what a check reports through. *testing.T satisfies it, so `go
// test` runs the checks as subtests; [RunLive] implements it to run the
// same checks from a command, without linking package testing. Fatal,
// FailNow and Skip must end the check's goroutine (runtime.Goexit).
type T interface {
	Helper()
	Context() context.Context
	Cleanup(func())
	Log(args ...any)
	Logf(format string, args ...any)
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
	Failed() bool
}

// Check is one named backend check.
type Check struct {
	Name string
	Run  func(t T, b backend.Backend)
}

// All lists every backend check, grouped by file. The order is only the
// order of the report: each check gets its own backend and relies on no
// other. Run each on a backend behind [backend.Portable], as backend.Open
// returns every store.
func All() []Check {
	var all []Check
	for _, group := range [][]Check{basicChecks, conditionalGetChecks, rangeChecks, listChecks, createChecks, casChecks, deleteChecks, cancelChecks, keyChecks, condChecks} {
		all = append(all, group...)
	}
	return all
}

// Capability gates. Each skip names the capability, so a skipped check is
// visible in `go test -v` output and a CI job can grep for it.

func needListAfterWrite(t T, b backend.Backend) {
	t.Helper()
	if !b.Capabilities().ListAfterWrite {
		t.Skip("backend does not claim Capabilities().ListAfterWrite: a List may miss objects just written")
	}
}

func needCreate(t T, b backend.Backend) {
	t.Helper()
	if c := b.Capabilities(); !c.AtomicCreate && !c.ConditionalPut {
		t.Skip("backend claims neither Capabilities().AtomicCreate nor Capabilities().ConditionalPut: Cond{IfAbsent} is not supported")
	}
}

func needConditionalPut(t T, b backend.Backend) {
	t.Helper()
	if !b.Capabilities().ConditionalPut {
		t.Skip("backend does not claim Capabilities().ConditionalPut: Put with Cond{IfMatch} is not supported")
	}
}

func needConditionalDelete(t T, b backend.Backend) {
	t.Helper()
	if !b.Capabilities().ConditionalDelete {
		t.Skip("backend does not claim Capabilities().ConditionalDelete: Delete with Cond{IfMatch} is not supported")
	}
}

// body returns n bytes derived from seed. Different seeds give different
// bytes at every offset, so a truncated, partial or mixed object never equals
// a whole one by accident, and no two checks' objects share an S3 ETag.
func body(seed string, n int) []byte {
	rng := rand.NewChaCha8(sha256.Sum256([]byte(seed)))
	out := make([]byte, n)
	_, _ = rng.Read(out) // ChaCha8.Read never fails
	return out
}

// put stores data unconditionally, fails the check on error and checks the
// returned info.
func put(t T, b backend.Backend, key string, data []byte) backend.ObjectInfo {
	t.Helper()
	info, err := backend.PutBytes(t.Context(), b, key, data, backend.Cond{})
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	checkInfo(t, "Put", key, info, int64(len(data)))
	return info
}

// checkInfo checks what every successful verb must report about an object.
func checkInfo(t T, op, key string, info backend.ObjectInfo, size int64) {
	t.Helper()
	if info.Key != key {
		t.Errorf("%s(%q): ObjectInfo.Key = %q, want the key itself", op, key, info.Key)
	}
	if info.Size != size {
		t.Errorf("%s(%q): ObjectInfo.Size = %d, want %d", op, key, info.Size, size)
	}
	if info.Version == "" {
		t.Errorf("%s(%q): ObjectInfo.Version is empty; a stored object always has one", op, key)
	}
}

// get reads a whole object. It returns the error of Get or of the read, and
// closes the reader in every case.
func get(ctx context.Context, b backend.Backend, key string, opts backend.GetOptions) ([]byte, backend.ObjectInfo, error) {
	rc, info, err := b.Get(ctx, key, opts)
	if err != nil {
		if rc != nil {
			rc.Close()
			return nil, info, fmt.Errorf("get returned a reader with error %w", err)
		}
		return nil, info, err
	}
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return data, info, err
}

// wantObject checks that Get and Stat both see exactly want under key, at
// version wantVersion if it is not empty, and returns the version they agree
// on.
func wantObject(t T, b backend.Backend, key string, want []byte, wantVersion backend.Version) backend.Version {
	t.Helper()
	data, info, err := get(t.Context(), b, key, backend.GetOptions{})
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("Get(%q) = %s, want %s", key, describe(data), describe(want))
	}
	checkInfo(t, "Get", key, info, int64(len(data)))
	if wantVersion != "" && info.Version != wantVersion {
		t.Errorf("Get(%q): Version = %q, want %q", key, info.Version, wantVersion)
	}
	st, err := b.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	checkInfo(t, "Stat", key, st, int64(len(want)))
	if st.Version != info.Version {
		t.Errorf("Stat(%q): Version = %q, but Get just returned %q for the same object", key, st.Version, info.Version)
	}
	return info.Version
}

// wantAbsent checks that Get and Stat both classify key as missing.
func wantAbsent(t T, b backend.Backend, key string) {
	t.Helper()
	data, _, err := get(t.Context(), b, key, backend.GetOptions{})
	if !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("Get(%q) after no successful write: got %s, err %v; want errors.Is(err, backend.ErrNotExist)", key, describe(data), err)
	}
	if _, err := b.Stat(t.Context(), key); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("Stat(%q) after no successful write: err = %v, want errors.Is(err, backend.ErrNotExist)", key, err)
	}
}

// wantIs fails the check unless errors.Is(err, target).
func wantIs(t T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want errors.Is(err, %v)", what, err, target)
	}
}

// describe names a body in a failure message without printing a megabyte.
func describe(data []byte) string {
	if data == nil {
		return "no object"
	}
	if len(data) <= 32 {
		return fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%d bytes starting %q", len(data), data[:16])
}

// putRetrying is Put as a caller behind backend.Retry sees it: a retryable
// error (S3's 409 ConditionalRequestConflict between concurrent conditional
// writes) is sent again, a few times. Only the concurrent checks use it; a
// sequential check must not need a retry.
func putRetrying(ctx context.Context, b backend.Backend, key string, data []byte, cond backend.Cond, rng *rand.Rand) (backend.ObjectInfo, error) {
	for attempt := 1; ; attempt++ {
		info, err := backend.PutBytes(ctx, b, key, data, cond)
		if err == nil || !backend.IsRetryable(err) || attempt == 5 {
			return info, err
		}
		backoff(rng, attempt)
	}
}

// backoff waits a little before attempt number attempt (1-based) of a
// contended write, so workers that keep colliding spread out. It is a pause,
// never a way to order events: every check's outcome holds for any schedule.
func backoff(rng *rand.Rand, attempt int) {
	if attempt < 3 {
		runtime.Gosched()
		return
	}
	ceiling := time.Duration(min(attempt, 20)) * 100 * time.Microsecond
	time.Sleep(time.Duration(rng.Int64N(int64(ceiling))))
}

// keysOf returns the keys of infos, for messages and comparisons.
func keysOf(infos []backend.ObjectInfo) []string {
	keys := make([]string, len(infos))
	for i, o := range infos {
		keys[i] = o.Key
	}
	return keys
}

// quoteAll formats keys for a failure message.
func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return "[" + strings.Join(q, " ") + "]"
}
