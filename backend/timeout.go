package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The three bounds on waiting for a store. A request that gets no answer
// has [DefaultFirstByteTimeout] per attempt; a transfer that is moving
// has [DefaultStallTimeout] between bytes, however long it runs in all;
// and an operation (one request with all its retries) that makes no
// progress at all fails after [DefaultTimeout]. So an endpoint that
// accepts connections and never answers fails in 15 s, while a slow but
// moving 1 GiB transfer is never cut.
const (
	// DefaultTimeout is the operation deadline of [Retry]: how long one
	// request, with all its attempts and the waits between them, may go
	// without progress (an answer, a body byte moved) before it fails.
	// It is --timeout and ?timeout=.
	DefaultTimeout = 15 * time.Second
	// DefaultFirstByteTimeout is how long one attempt may wait for the
	// store to begin answering: connecting, sending the request and
	// receiving the response's headers (a Get) or the whole answer of a
	// metadata request (Stat, Delete, one List page). ?first_byte_timeout=.
	DefaultFirstByteTimeout = 5 * time.Second
	// DefaultStallTimeout is how long a transfer that has started (a Get
	// body, a Put body the client reads, a Put's answer after its body)
	// may go without moving a byte. It is not a bound on the total: a
	// transfer that keeps moving is never cut. ?stall_timeout=.
	DefaultStallTimeout = 30 * time.Second
)

// ErrTimeout is returned (inside a retryable [*Error] holding a
// [*TimeoutError]) when a request makes no progress within its deadline.
var ErrTimeout = errors.New("request timed out")

// TimeoutError names the endpoint that stopped answering and for how long,
// so "silt pull" against a server that accepts connections and never
// answers says where it waited. It matches ErrTimeout with errors.Is.
type TimeoutError struct {
	Endpoint string        // as [EndpointOf] names the store
	After    time.Duration // the bound that passed
	// Stalled is set when the request had started to move bytes (a Get's
	// headers had arrived, a Put's body was being read) and then stopped:
	// the stall bound passed, not the first-byte one.
	Stalled bool
	Err     error // what the store's client returned when cancelled
}

func (e *TimeoutError) Error() string {
	if e.Stalled {
		return fmt.Sprintf("transfer with %s stalled: no bytes moved for %v (set a longer bound with ?stall_timeout=)", e.Endpoint, e.After)
	}
	return fmt.Sprintf("no response from %s within %v", e.Endpoint, e.After.Round(time.Millisecond))
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

// TimeoutConfig bounds [Timeouts]. Zero fields take the defaults.
type TimeoutConfig struct {
	// FirstByte bounds one attempt's wait for the store to begin
	// answering; 0 means [DefaultFirstByteTimeout].
	FirstByte time.Duration
	// Stall bounds a moving transfer's wait for its next byte; 0 means
	// [DefaultStallTimeout].
	Stall time.Duration
}

// Timeout returns [Timeouts] of b with both bounds d (d <= 0 means the
// defaults).
func Timeout(b Backend, d time.Duration) Backend {
	return Timeouts(b, TimeoutConfig{FirstByte: d, Stall: d})
}

// Timeouts returns a backend that fails a request of b once it has waited
// too long for the store, measuring progress rather than estimating it
// from a size. A metadata request (Stat, Delete, one List page) has
// cfg.FirstByte to be answered; a Get has cfg.FirstByte for its response
// to arrive and then cfg.Stall for each Read of its body; a Put has
// cfg.FirstByte until the client first reads its body and cfg.Stall after
// each chunk it reads (and for the answer after the last), so a large
// upload that keeps moving is never cut off. Time spent in the caller
// (inside a List page function, between Reads) does not count.
//
// Under [Retry], which sets an operation deadline, the first-byte bound
// of attempt i (from 0) is cfg.FirstByte·2ⁱ (a slow store still gets
// answered on a later attempt) and never runs past the deadline, so a
// store that never answers fails within it.
//
// An expired bound is a retryable [*Error] holding a [*TimeoutError]
// that names the endpoint; the caller's own cancellation still comes back
// as the context's error. Put Timeouts under [Retry], so that each attempt
// gets its own bounds.
func Timeouts(b Backend, cfg TimeoutConfig) Backend {
	if cfg.FirstByte <= 0 {
		cfg.FirstByte = DefaultFirstByteTimeout
	}
	if cfg.Stall <= 0 {
		cfg.Stall = DefaultStallTimeout
	}
	return &timeout{Backend: b, cfg: cfg, endpoint: EndpointOf(b)}
}

type timeout struct {
	Backend
	cfg      TimeoutConfig
	endpoint string
}

// Unwrap returns the wrapped backend.
func (t *timeout) Unwrap() Backend { return t.Backend }

// firstByte is the first-byte bound of a request under ctx.
func (t *timeout) firstByte(ctx context.Context) time.Duration {
	if c := clockOf(ctx); c != nil {
		return c.firstByte(t.cfg.FirstByte)
	}
	return t.cfg.FirstByte
}

// idle is the cancellation cause of a watchdog that fired.
type idle struct {
	after   time.Duration
	stalled bool
}

func (*idle) Error() string { return "no progress" }

// watchdog cancels its context once its bound passes without a touch.
type watchdog struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer

	mu      sync.Mutex
	d       time.Duration
	stalled bool
}

func (t *timeout) watch(ctx context.Context, d time.Duration) *watchdog {
	wctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{parent: ctx, ctx: wctx, cancel: cancel, d: d}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		cause := &idle{after: w.d, stalled: w.stalled}
		w.mu.Unlock()
		cancel(cause)
	})
	return w
}

// arm restarts the clock with bound d; stalled says the transfer has
// started, so that a timeout names a stall.
func (w *watchdog) arm(d time.Duration, stalled bool) {
	w.mu.Lock()
	w.d, w.stalled = d, stalled
	w.mu.Unlock()
	w.timer.Reset(d)
}

func (w *watchdog) pause() { w.timer.Stop() }
func (w *watchdog) stop()  { w.timer.Stop(); w.cancel(nil) }

// fail turns an error caused by the watchdog into a timeout naming the
// endpoint; any other error, the caller's cancellation included, stands.
func (t *timeout) fail(w *watchdog, op, key string, err error) error {
	var cause *idle
	if err == nil || err == io.EOF || w.parent.Err() != nil || !errors.As(context.Cause(w.ctx), &cause) {
		return err
	}
	return Retryable(op, key, &TimeoutError{Endpoint: t.endpoint, After: cause.after, Stalled: cause.stalled, Err: err})
}

func (t *timeout) Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error) {
	w := t.watch(ctx, t.firstByte(ctx))
	rc, info, err := t.Backend.Get(w.ctx, key, opts)
	if err != nil {
		w.stop()
		return nil, info, t.fail(w, "get", key, err)
	}
	c := clockOf(ctx)
	c.progress()
	// Between Reads the clock stops: a slow consumer is not a slow store.
	w.pause()
	return &timedBody{rc: rc, w: w, t: t, key: key, clock: c}, info, nil
}

// timedBody gives each Read of a Get body its own stall bound.
type timedBody struct {
	rc    io.ReadCloser
	w     *watchdog
	t     *timeout
	key   string
	clock *opClock
}

func (b *timedBody) Read(p []byte) (int, error) {
	b.w.arm(b.t.cfg.Stall, true)
	n, err := b.rc.Read(p)
	b.w.pause()
	if n > 0 {
		b.clock.progress()
	}
	return n, b.t.fail(b.w, "get", b.key, err)
}

func (b *timedBody) Close() error {
	err := b.rc.Close()
	b.w.stop()
	return err
}

func (t *timeout) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	w := t.watch(ctx, t.firstByte(ctx))
	defer w.stop()
	info, err := t.Backend.Put(w.ctx, key, &progressBody{ReadSeeker: body, w: w, stall: t.cfg.Stall, clock: clockOf(ctx)}, size, cond)
	return info, t.fail(w, "put", key, err)
}

// progressBody restarts the stall bound whenever the client reads the
// body.
type progressBody struct {
	io.ReadSeeker
	w     *watchdog
	stall time.Duration
	clock *opClock
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadSeeker.Read(p)
	if n > 0 {
		b.w.arm(b.stall, true)
		b.clock.progress()
	}
	return n, err
}

func (t *timeout) Delete(ctx context.Context, key string, cond Cond) error {
	w := t.watch(ctx, t.firstByte(ctx))
	defer w.stop()
	return t.fail(w, "delete", key, t.Backend.Delete(w.ctx, key, cond))
}

func (t *timeout) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	w := t.watch(ctx, t.firstByte(ctx))
	defer w.stop()
	info, err := t.Backend.Stat(w.ctx, key)
	return info, t.fail(w, "stat", key, err)
}

func (t *timeout) List(ctx context.Context, prefix string, opts ListOptions, fn func([]ObjectInfo) error) error {
	w := t.watch(ctx, t.firstByte(ctx))
	defer w.stop()
	c := clockOf(ctx)
	var fnErr error
	err := t.Backend.List(w.ctx, prefix, opts, func(page []ObjectInfo) error {
		w.pause()
		c.progress()
		fnErr = fn(page)
		// The next page is a request of its own.
		w.arm(t.firstByte(ctx), false)
		return fnErr
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return err
	}
	return t.fail(w, "list", prefix, err)
}
