package conformance

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
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
)

// Factory returns a fresh, empty backend for one subtest; the suite closes it
// with t.Cleanup. It may call t.Skip (say, when credentials are missing) or
// t.Fatal (when setup fails); both stop only that subtest.
type Factory func(t *testing.T) backend.Backend

// check is one named conformance check. It takes a testing.TB, not a
// *testing.T, so the suite's own tests can run a check against a broken
// backend and observe that it fails.
type check struct {
	name string
	run  func(t testing.TB, b backend.Backend)
}

// RunBackend runs every backend check as a subtest of t, each on a fresh
// backend from newBackend, seen through [backend.Portable] as users see it
// (backend.Open puts that layer over every driver): the checks of keys,
// conditions, contexts and page sizes are the portable layer's, so they
// hold alike on every store, and the store's own behaviour is the rest.
//
// Checks run one after another, never in parallel: a real store's rate
// limits and an emulator's single process are shared by all of them, and a
// failure is easier to read when nothing else was running.
func RunBackend(t *testing.T, newBackend Factory) {
	t.Helper()
	for _, c := range allChecks() {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t)
			if b == nil {
				t.Fatal("conformance: Factory returned a nil backend")
			}
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			c.run(t, backend.Portable(b))
		})
	}
}

// allChecks lists every check, grouped by file. The order is only the order
// of the report: each check gets its own backend and relies on no other.
func allChecks() []check {
	var all []check
	for _, group := range [][]check{basicChecks, conditionalGetChecks, listChecks, createChecks, casChecks, deleteChecks, cancelChecks, keyChecks, condChecks} {
		all = append(all, group...)
	}
	return all
}

// Capability gates. Each skip names the capability, so a skipped check is
// visible in `go test -v` output and a CI job can grep for it.

func needListAfterWrite(t testing.TB, b backend.Backend) {
	t.Helper()
	if !b.Capabilities().ListAfterWrite {
		t.Skip("backend does not claim Capabilities().ListAfterWrite: a List may miss objects just written")
	}
}

func needCreate(t testing.TB, b backend.Backend) {
	t.Helper()
	if c := b.Capabilities(); !c.AtomicCreate && !c.ConditionalPut {
		t.Skip("backend claims neither Capabilities().AtomicCreate nor Capabilities().ConditionalPut: Cond{IfAbsent} is not supported")
	}
}

func needConditionalPut(t testing.TB, b backend.Backend) {
	t.Helper()
	if !b.Capabilities().ConditionalPut {
		t.Skip("backend does not claim Capabilities().ConditionalPut: Put with Cond{IfMatch} is not supported")
	}
}

func needConditionalDelete(t testing.TB, b backend.Backend) {
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
func put(t testing.TB, b backend.Backend, key string, data []byte) backend.ObjectInfo {
	t.Helper()
	info, err := backend.PutBytes(t.Context(), b, key, data, backend.Cond{})
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	checkInfo(t, "Put", key, info, int64(len(data)))
	return info
}

// checkInfo checks what every successful verb must report about an object.
func checkInfo(t testing.TB, op, key string, info backend.ObjectInfo, size int64) {
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
			return nil, info, fmt.Errorf("Get returned a reader with error %w", err)
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
func wantObject(t testing.TB, b backend.Backend, key string, want []byte, wantVersion backend.Version) backend.Version {
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
func wantAbsent(t testing.TB, b backend.Backend, key string) {
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
func wantIs(t testing.TB, what string, err, target error) {
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

// putRetrying is Put as a caller behind wrap.Retry sees it: a retryable
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
