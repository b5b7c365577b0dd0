package check

import (
	"bytes"
	"errors"

	"github.com/siltsync/silt/backend"
)

// condChecks cover the condition rules every store shares (backend.Portable
// applies them once): contradictory conditions are the caller's bug and
// are refused before any I/O, alike on every store, whatever it claims.
var condChecks = []Check{
	{"Put_IfAbsentWithIfMatch_IsErrInvalidCondAndStoresNothing", checkPutBothConds},
	{"Get_IfMatchWithIfNoneMatch_IsErrInvalidCond", checkGetBothConds},
	{"Put_NegativeSize_IsErrInvalidCond", checkPutNegativeSize},
	{"Delete_IfAbsent_IsErrNotSupportedAndKeepsObject", checkDeleteIfAbsent},
}

func wantInvalidCond(t T, what string, err error) {
	t.Helper()
	if !errors.Is(err, backend.ErrInvalidCond) || backend.IsRetryable(err) {
		t.Errorf("%s: err = %v, want a permanent error matching backend.ErrInvalidCond", what, err)
	}
}

func checkPutBothConds(t T, b backend.Backend) {
	ctx := t.Context()
	// On a missing key and on an existing one, with its current version:
	// neither half of the condition may win on its own.
	w := &tripwire{r: bytes.NewReader([]byte("data"))}
	_, err := b.Put(ctx, "both/absent", w, 4, backend.Cond{IfAbsent: true, IfMatch: "v"})
	wantInvalidCond(t, "Put(missing key, IfAbsent+IfMatch)", err)
	if w.touched.Load() {
		t.Error("Put with IfAbsent+IfMatch read or sought the body before refusing")
	}
	if _, err := b.Stat(ctx, "both/absent"); !backend.IsNotExist(err) {
		t.Errorf("after the refused Put, Stat = %v, want ErrNotExist", err)
	}
	info := put(t, b, "both/present", []byte("old"))
	_, err = backend.PutBytes(ctx, b, "both/present", []byte("new"), backend.Cond{IfAbsent: true, IfMatch: info.Version})
	wantInvalidCond(t, "Put(existing key, IfAbsent+IfMatch of its version)", err)
	data, _, err := backend.ReadAll(ctx, b, "both/present", backend.GetOptions{}, 0)
	if err != nil || string(data) != "old" {
		t.Errorf("after the refused Put, the object is %q (%v), want \"old\"", data, err)
	}
}

func checkGetBothConds(t T, b backend.Backend) {
	info := put(t, b, "k", []byte("x"))
	rc, _, err := b.Get(t.Context(), "k", backend.GetOptions{IfMatch: info.Version, IfNoneMatch: "other"})
	if rc != nil {
		rc.Close()
	}
	wantInvalidCond(t, "Get(IfMatch+IfNoneMatch)", err)
}

func checkPutNegativeSize(t T, b backend.Backend) {
	_, err := b.Put(t.Context(), "k", bytes.NewReader(nil), -1, backend.Cond{})
	wantInvalidCond(t, "Put(size -1)", err)
}

func checkDeleteIfAbsent(t T, b backend.Backend) {
	put(t, b, "k", []byte("x"))
	err := b.Delete(t.Context(), "k", backend.Cond{IfAbsent: true})
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("Delete(IfAbsent): err = %v, want backend.ErrNotSupported", err)
	}
	if _, err := b.Stat(t.Context(), "k"); err != nil {
		t.Errorf("after the refused Delete, Stat = %v, want the object", err)
	}
}
