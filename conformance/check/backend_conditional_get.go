package check

import (
	"errors"

	"github.com/siltsync/silt/backend"
)

// conditionalGetChecks cover GetOptions.IfNoneMatch, the conditional read a
// caller uses to skip downloading an object it already holds. Every backend
// must honour it: there is no capability to claim.
var conditionalGetChecks = []Check{
	{"Get_IfNoneMatchCurrentVersion_IsErrNotModified", checkGetIfNoneMatchCurrent},
	{"Get_IfNoneMatchStaleVersion_ReturnsTheObject", checkGetIfNoneMatchStale},
	{"Get_IfNoneMatchMissingKey_IsErrNotExist", checkGetIfNoneMatchMissing},
}

func checkGetIfNoneMatchCurrent(t T, b backend.Backend) {
	data := body("ifnonematch-current", 300)
	info := put(t, b, "k", data)
	rc, _, err := b.Get(t.Context(), "k", backend.GetOptions{IfNoneMatch: info.Version})
	if rc != nil {
		rc.Close()
		t.Errorf("Get(IfNoneMatch: current version %q) returned a reader (err %v); an unchanged object has no body", info.Version, err)
	}
	if err == nil {
		t.Fatalf("Get(IfNoneMatch: current version %q) succeeded, want ErrNotModified", info.Version)
	}
	wantIs(t, "Get(IfNoneMatch: current version)", err, backend.ErrNotModified)
	if errors.Is(err, backend.ErrPrecondition) || errors.Is(err, backend.ErrNotExist) || backend.IsRetryable(err) {
		t.Errorf("Get(IfNoneMatch: current version): err = %v is also a precondition failure, a missing key or retryable; it must be only ErrNotModified", err)
	}
	// The refused read changed nothing.
	wantObject(t, b, "k", data, info.Version)
}

func checkGetIfNoneMatchStale(t T, b backend.Backend) {
	old := put(t, b, "k", body("ifnonematch-old", 100))
	newer := body("ifnonematch-new", 120)
	cur := put(t, b, "k", newer)
	got, gi, err := get(t.Context(), b, "k", backend.GetOptions{IfNoneMatch: old.Version})
	if err != nil {
		t.Fatalf("Get(IfNoneMatch: stale version %q) after an overwrite: %v, want the new object", old.Version, err)
	}
	if string(got) != string(newer) {
		t.Errorf("Get(IfNoneMatch: stale version) = %s, want the new object %s", describe(got), describe(newer))
	}
	checkInfo(t, "Get", "k", gi, int64(len(newer)))
	if gi.Version != cur.Version {
		t.Errorf("Get(IfNoneMatch: stale version) reported version %q, want the new version %q", gi.Version, cur.Version)
	}
}

func checkGetIfNoneMatchMissing(t T, b backend.Backend) {
	gone := put(t, b, "k", body("ifnonematch-gone", 10))
	if err := b.Delete(t.Context(), "k", backend.Cond{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	rc, _, err := b.Get(t.Context(), "k", backend.GetOptions{IfNoneMatch: gone.Version})
	if rc != nil {
		rc.Close()
		t.Errorf("Get(IfNoneMatch) of a deleted key returned a reader")
	}
	wantIs(t, "Get(IfNoneMatch) of a deleted key", err, backend.ErrNotExist)
	if errors.Is(err, backend.ErrNotModified) || errors.Is(err, backend.ErrPrecondition) || backend.IsRetryable(err) {
		t.Errorf("Get(IfNoneMatch) of a deleted key: err = %v is also not-modified, a precondition failure or retryable; it must be only ErrNotExist", err)
	}
}
