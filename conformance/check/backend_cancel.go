package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/siltsync/silt/backend"
)

// cancelChecks cover cancellation: a cancelled Put leaves the old object or
// the whole new one, never a partial one, and a cancelled List stops.
var cancelChecks = []Check{
	{"Put_CancelledContext_FailsAndStoresNothing", checkPutCancelledAbsent},
	{"Put_CancelledContext_FailsAndKeepsOldObject", checkPutCancelledExisting},
	{"Put_ContextCancelledMidBody_StoresNoPartialObject", checkPutCancelledMidBodyAbsent},
	{"Put_ContextCancelledMidBody_LeavesOldOrNewObject", checkPutCancelledMidBodyExisting},
	{"Verbs_CancelledContext_FailWithoutSideEffects", checkVerbsCancelled},
	{"List_ContextCancelledInCallback_StopsWithError", checkListCancelledInCallback},
}

// cancelledContext returns a context that is already cancelled.
func cancelledContext(t T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// wantCancelled checks that err reports the cancellation, so that callers
// and backend.Retry can tell it from a store failure with errors.Is.
func wantCancelled(t T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s with a cancelled context succeeded", what)
		return
	}
	wantIs(t, what+" with a cancelled context", err, context.Canceled)
	if backend.IsRetryable(err) {
		t.Errorf("%s with a cancelled context: err = %v is retryable; a cancelled context never is", what, err)
	}
}

func checkPutCancelledAbsent(t T, b backend.Backend) {
	_, err := backend.PutBytes(cancelledContext(t), b, "k", body("cancelled", 1000), backend.Cond{})
	wantCancelled(t, "Put", err)
	wantAbsent(t, b, "k")
}

func checkPutCancelledExisting(t T, b backend.Backend) {
	old := body("old", 1000)
	info := put(t, b, "k", old)
	_, err := backend.PutBytes(cancelledContext(t), b, "k", body("cancelled", 1000), backend.Cond{})
	wantCancelled(t, "Put", err)
	wantObject(t, b, "k", old, info.Version)
}

// cancellingBody serves its bytes in small chunks and cancels the Put's
// context as it hands out the first one, so the cancellation lands while
// the backend is in the middle of the body. It keeps serving bytes after
// that: whether the upload stops is the backend's business.
type cancellingBody struct {
	mu     sync.Mutex // the body may be read and sought from a transport goroutine
	r      *bytes.Reader
	cancel context.CancelFunc
}

// cancelChunk is small against midBodySize, so the first chunk is far from
// the whole body.
const (
	cancelChunk = 16 << 10
	midBodySize = 512 << 10
)

func (c *cancellingBody) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.r.Read(p[:min(len(p), cancelChunk)])
	if n > 0 {
		c.cancel()
	}
	return n, err
}

func (c *cancellingBody) Seek(offset int64, whence int) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Seek(offset, whence)
}

// putCancelledMidBody writes data under key through a cancellingBody and
// returns Put's error.
func putCancelledMidBody(t T, b backend.Backend, key string, data []byte) error {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := b.Put(ctx, key, &cancellingBody{r: bytes.NewReader(data), cancel: cancel}, int64(len(data)), backend.Cond{})
	return err
}

// wantOldOrNew checks the contract's promise for a cancelled Put: the key
// holds old (nil: no object) or all of data, never anything else; and if Put
// succeeded, it holds data.
func wantOldOrNew(t T, b backend.Backend, key string, old, data []byte, putErr error) {
	t.Helper()
	got, _, err := get(t.Context(), b, key, backend.GetOptions{})
	switch {
	case errors.Is(err, backend.ErrNotExist):
		got = nil
	case err != nil:
		t.Fatalf("Get(%q) after a cancelled Put: %v", key, err)
	}
	switch {
	case putErr == nil && !bytes.Equal(got, data):
		t.Errorf("Put succeeded despite the cancellation, but %q holds %s, not the %d bytes written", key, describe(got), len(data))
	case bytes.Equal(got, data):
		t.Logf("Put finished the upload despite the cancellation (err %v); allowed", putErr)
	case old == nil && got != nil:
		t.Errorf("a Put cancelled mid-body left %s under %q, which held nothing before", describe(got), key)
	case old != nil && !bytes.Equal(got, old):
		t.Errorf("a Put cancelled mid-body left %s under %q; want the old %d bytes or the new %d", describe(got), key, len(old), len(data))
	}
}

func checkPutCancelledMidBodyAbsent(t T, b backend.Backend) {
	data := body("mid-body-new", midBodySize)
	err := putCancelledMidBody(t, b, "k", data)
	wantOldOrNew(t, b, "k", nil, data, err)
}

func checkPutCancelledMidBodyExisting(t T, b backend.Backend) {
	old := body("mid-body-old", midBodySize)
	put(t, b, "k", old)
	data := body("mid-body-new", midBodySize)
	err := putCancelledMidBody(t, b, "k", data)
	wantOldOrNew(t, b, "k", old, data, err)
}

func checkVerbsCancelled(t T, b backend.Backend) {
	data := body("keep", 100)
	info := put(t, b, "k", data)
	ctx := cancelledContext(t)

	rc, _, err := b.Get(ctx, "k", backend.GetOptions{})
	if err == nil {
		// The request may have been answered before the cancel was seen;
		// reading the body must then fail.
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
	}
	wantCancelled(t, "Get", err)
	_, err = b.Stat(ctx, "k")
	wantCancelled(t, "Stat", err)
	err = b.List(ctx, "", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
	wantCancelled(t, "List", err)
	err = b.Delete(ctx, "k", backend.Cond{})
	wantCancelled(t, "Delete", err)
	wantObject(t, b, "k", data, info.Version)
}

func checkListCancelledInCallback(t T, b backend.Backend) {
	needListAfterWrite(t, b)
	for i := range 10 {
		put(t, b, fmt.Sprintf("k%02d", i), body(fmt.Sprint(i), 5))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancelled, after := false, 0
	err := b.List(ctx, "", backend.ListOptions{PageSize: 2}, func(page []backend.ObjectInfo) error {
		switch {
		case cancelled:
			after++
		case len(page) > 0:
			cancel()
			cancelled = true
		}
		return nil
	})
	if !cancelled {
		t.Fatal("List delivered no objects")
	}
	wantCancelled(t, "List cancelled from its callback", err)
	if after > 0 {
		t.Errorf("List called the callback %d more times after its context was cancelled", after)
	}
}
