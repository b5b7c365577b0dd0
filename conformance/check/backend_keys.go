package check

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/siltsync/silt/backend"
)

// keyChecks cover key validation and the size argument of Put.
var keyChecks = []Check{
	{"Keys_Invalid_RejectedByEveryVerbBeforeIO", checkInvalidKeys},
	{"List_InvalidPrefix_RejectedBeforeIO", checkInvalidPrefixes},
	{"Put_BodyShorterThanSize_FailsAndStoresNothing", checkPutShortBody},
	{"Put_BodyLongerThanSize_StoresAtMostSizeBytes", checkPutLongBody},
}

// invalidKeys break one rule of backend.ValidateKey each.
var invalidKeys = []string{
	"",
	"/abs",
	"a/../b",
	"..",
	"a/./b",
	"./a",
	"a//b",
	"a\\b",
	"a\x00b",
	"a\nb",
	"a\x7fb",
	"\xff",
	"a/",
	strings.Repeat("k", backend.MaxKeyLen+1),
}

// invalidPrefixes break a rule of backend.ValidatePrefix each. Unlike a
// key, a prefix may be empty or end in "/".
var invalidPrefixes = []string{
	"../x",
	"/abs",
	"a/../b",
	"a/./b",
	"a//b",
	"a//",
	"a\\b",
	"a\x00b",
	"\xff",
	strings.Repeat("k", backend.MaxKeyLen+1),
}

// tripwire is a Put body that records whether anything read or sought it:
// for an invalid key, Put must return before touching the body.
type tripwire struct {
	touched atomic.Bool
	r       *bytes.Reader
}

func (w *tripwire) Read(p []byte) (int, error) {
	w.touched.Store(true)
	return w.r.Read(p)
}

func (w *tripwire) Seek(offset int64, whence int) (int64, error) {
	w.touched.Store(true)
	return w.r.Seek(offset, whence)
}

// wantInvalid checks that err is a key rejection.
func wantInvalid(t T, what string, err error) {
	t.Helper()
	if !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("%s: err = %v, want errors.Is(err, backend.ErrInvalidKey)", what, err)
	}
}

func checkInvalidKeys(t T, b backend.Backend) {
	ctx := t.Context()
	for _, key := range invalidKeys {
		rc, _, err := b.Get(ctx, key, backend.GetOptions{})
		if rc != nil {
			rc.Close()
		}
		wantInvalid(t, fmt.Sprintf("Get(%q)", key), err)

		rc, _, err = b.Get(ctx, key, backend.GetOptions{IfMatch: "v"})
		if rc != nil {
			rc.Close()
		}
		wantInvalid(t, fmt.Sprintf("Get(%q, IfMatch)", key), err)

		for _, cond := range []backend.Cond{{}, {IfAbsent: true}, {IfMatch: "v"}} {
			w := &tripwire{r: bytes.NewReader([]byte("data"))}
			_, err = b.Put(ctx, key, w, 4, cond)
			wantInvalid(t, fmt.Sprintf("Put(%q, %+v)", key, cond), err)
			if w.touched.Load() {
				t.Errorf("Put(%q, %+v) read or sought the body before rejecting the key", key, cond)
			}
		}

		err = b.Delete(ctx, key, backend.Cond{})
		wantInvalid(t, fmt.Sprintf("Delete(%q)", key), err)
		err = b.Delete(ctx, key, backend.Cond{IfMatch: "v"})
		wantInvalid(t, fmt.Sprintf("Delete(%q, IfMatch)", key), err)

		_, err = b.Stat(ctx, key)
		wantInvalid(t, fmt.Sprintf("Stat(%q)", key), err)
	}
	// Nothing was stored under any spelling of those keys.
	err := b.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			t.Errorf("after only rejected writes, List returned %q", o.Key)
		}
		return nil
	})
	if err != nil {
		t.Errorf("List: %v", err)
	}
}

func checkInvalidPrefixes(t T, b backend.Backend) {
	put(t, b, "x", body("x", 3)) // so a listing that escaped would have something to show
	for _, prefix := range invalidPrefixes {
		calls := 0
		err := b.List(t.Context(), prefix, backend.ListOptions{}, func([]backend.ObjectInfo) error {
			calls++
			return nil
		})
		wantInvalid(t, fmt.Sprintf("List(%q)", prefix), err)
		if calls > 0 {
			t.Errorf("List(%q) called its callback before rejecting the prefix", prefix)
		}
	}
}

// checkPutShortBody passes a size larger than the body. A store that
// trusted the size would hang or store a short object; the body ends early,
// so the request can never complete and nothing may be stored.
func checkPutShortBody(t T, b backend.Backend) {
	data := body("short", 1000)
	_, err := b.Put(t.Context(), "k", bytes.NewReader(data), int64(len(data))+1, backend.Cond{})
	if err == nil {
		t.Errorf("Put of %d bytes with size %d succeeded", len(data), len(data)+1)
	}
	if errors.Is(err, backend.ErrNotExist) || errors.Is(err, backend.ErrPrecondition) {
		t.Errorf("Put with a short body: err = %v, which claims a missing key or a failed condition", err)
	}
	wantAbsent(t, b, "k")
}

// checkPutLongBody passes a size smaller than the body. Put "stores size
// bytes from body", so storing exactly the first size bytes is conformant,
// and so is rejecting the mismatch (an HTTP client sends size bytes before
// it can notice more). Storing more than size bytes is not.
func checkPutLongBody(t T, b backend.Backend) {
	data := body("long", 1000)
	const size = 600
	info, err := b.Put(t.Context(), "k", bytes.NewReader(data), size, backend.Cond{})
	got, _, gerr := get(t.Context(), b, "k", backend.GetOptions{})
	switch {
	case err == nil && gerr != nil:
		t.Fatalf("Put succeeded but Get failed: %v", gerr)
	case err == nil:
		checkInfo(t, "Put", "k", info, size)
		if !bytes.Equal(got, data[:size]) {
			t.Errorf("Put(size %d) of a %d-byte body stored %s, want its first %d bytes", size, len(data), describe(got), size)
		}
	case errors.Is(gerr, backend.ErrNotExist):
		// Rejected and stored nothing: fine.
	case gerr != nil:
		t.Fatalf("Get after a failed Put: %v", gerr)
	case !bytes.Equal(got, data[:size]):
		t.Errorf("Put(size %d) of a %d-byte body failed (%v) but left %s", size, len(data), err, describe(got))
	}
}
