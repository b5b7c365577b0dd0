package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultTimeout is how long a request may go without progress before
// [Timeout] fails it: no answer to a metadata request, no body bytes moved
// by a transfer.
const DefaultTimeout = 30 * time.Second

// ErrTimeout is returned (inside a retryable [*Error] holding a
// [*TimeoutError]) when a request makes no progress within its deadline.
var ErrTimeout = errors.New("request timed out")

// TimeoutError names the endpoint that stopped answering and for how long,
// so "silt pull" against a server that accepts connections and never
// answers says where it waited. It matches ErrTimeout with errors.Is.
type TimeoutError struct {
	Endpoint string        // as [EndpointOf] names the store
	After    time.Duration // the deadline that passed
	Err      error         // what the store's client returned when cancelled
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("no response from %s within %v (set a longer deadline with ?timeout= or --timeout)", e.Endpoint, e.After)
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns the client's own error, unless that is only the
// cancellation the deadline caused: a timeout is not the caller giving up,
// and errors.Is(err, context.Canceled) must not say it was (a retry layer,
// or a command line's "interrupted", would take it for one).
func (e *TimeoutError) Unwrap() error {
	if errors.Is(e.Err, context.Canceled) {
		return nil
	}
	return e.Err
}

// Endpointer is implemented by stores that can name where their requests
// go ("s3 http://127.0.0.1:9000 bucket b"), for error messages.
type Endpointer interface {
	Endpoint() string
}

// EndpointOf names the store under b's wrappers: the first layer that
// implements [Endpointer], else the innermost store's type.
func EndpointOf(b Driver) string {
	for {
		if e, ok := b.(Endpointer); ok {
			return e.Endpoint()
		}
		next, ok := under(b)
		if !ok {
			return fmt.Sprintf("%T", b)
		}
		b = next
	}
}

// Timeout returns a backend that fails a request of b once it has made no
// progress for d (d <= 0 means [DefaultTimeout]). Progress is measured, not
// estimated from a size: a metadata request (Stat, Delete, one List page)
// has d to answer; a Put has d after each chunk of its body the client
// reads, so a large upload that keeps moving is never cut off; a Get has d
// to answer and then d for each Read of its body, which the deadline also
// covers. Time spent in the caller (inside a List page function, between
// Reads) does not count.
//
// An expired deadline is a retryable [*Error] holding a [*TimeoutError]
// that names the endpoint; the caller's own cancellation still comes back
// as the context's error. Put Timeout under [Retry], so that each attempt
// gets its own deadline.
func Timeout(b Backend, d time.Duration) Backend {
	if d <= 0 {
		d = DefaultTimeout
	}
	return &timeout{Backend: b, d: d, endpoint: EndpointOf(b)}
}

type timeout struct {
	Backend
	d        time.Duration
	endpoint string
}

// Unwrap returns the wrapped backend.
func (t *timeout) Unwrap() Backend { return t.Backend }

// errIdle is the cancellation cause of a watchdog that fired.
var errIdle = errors.New("no progress")

// watchdog cancels its context once d passes without a touch.
type watchdog struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	d      time.Duration
}

func (t *timeout) watch(ctx context.Context) *watchdog {
	wctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{parent: ctx, ctx: wctx, cancel: cancel, d: t.d}
	w.timer = time.AfterFunc(t.d, func() { cancel(errIdle) })
	return w
}

func (w *watchdog) touch() { w.timer.Reset(w.d) }
func (w *watchdog) pause() { w.timer.Stop() }
func (w *watchdog) stop()  { w.timer.Stop(); w.cancel(nil) }

// fail turns an error caused by the watchdog into a timeout naming the
// endpoint; any other error, the caller's cancellation included, stands.
func (t *timeout) fail(w *watchdog, op, key string, err error) error {
	if err == nil || err == io.EOF || w.parent.Err() != nil || !errors.Is(context.Cause(w.ctx), errIdle) {
		return err
	}
	return Retryable(op, key, &TimeoutError{Endpoint: t.endpoint, After: t.d, Err: err})
}

func (t *timeout) Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error) {
	w := t.watch(ctx)
	rc, info, err := t.Backend.Get(w.ctx, key, opts)
	if err != nil {
		w.stop()
		return nil, info, t.fail(w, "get", key, err)
	}
	// Between Reads the clock stops: a slow consumer is not a slow store.
	w.pause()
	return &timedBody{rc: rc, w: w, t: t, key: key}, info, nil
}

// timedBody gives each Read of a Get body its own deadline.
type timedBody struct {
	rc  io.ReadCloser
	w   *watchdog
	t   *timeout
	key string
}

func (b *timedBody) Read(p []byte) (int, error) {
	b.w.touch()
	n, err := b.rc.Read(p)
	b.w.pause()
	return n, b.t.fail(b.w, "get", b.key, err)
}

func (b *timedBody) Close() error {
	err := b.rc.Close()
	b.w.stop()
	return err
}

func (t *timeout) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	w := t.watch(ctx)
	defer w.stop()
	info, err := t.Backend.Put(w.ctx, key, &progressBody{ReadSeeker: body, w: w}, size, cond)
	return info, t.fail(w, "put", key, err)
}

// progressBody restarts the deadline whenever the client reads the body.
type progressBody struct {
	io.ReadSeeker
	w *watchdog
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadSeeker.Read(p)
	if n > 0 {
		b.w.touch()
	}
	return n, err
}

func (t *timeout) Delete(ctx context.Context, key string, cond Cond) error {
	w := t.watch(ctx)
	defer w.stop()
	return t.fail(w, "delete", key, t.Backend.Delete(w.ctx, key, cond))
}

func (t *timeout) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	w := t.watch(ctx)
	defer w.stop()
	info, err := t.Backend.Stat(w.ctx, key)
	return info, t.fail(w, "stat", key, err)
}

func (t *timeout) List(ctx context.Context, prefix string, opts ListOptions, fn func([]ObjectInfo) error) error {
	w := t.watch(ctx)
	defer w.stop()
	var fnErr error
	err := t.Backend.List(w.ctx, prefix, opts, func(page []ObjectInfo) error {
		w.pause()
		fnErr = fn(page)
		w.touch()
		return fnErr
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return err
	}
	return t.fail(w, "list", prefix, err)
}
