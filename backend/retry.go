package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/siltsync/silt/internal/backoff"
)

// RetryConfig bounds [Retry]. Zero fields take the defaults.
type RetryConfig struct {
	// Attempts is the most times one request is sent, the first included;
	// below 1 means [DefaultAttempts]. A resumed read counts its attempts
	// since the last byte it received, so a long download that keeps
	// moving is never cut off by the budget.
	Attempts int
	// Base is the backoff cap before the first resend, doubling for each
	// one after; 0 means 50 ms.
	Base time.Duration
	// Max bounds the backoff cap; 0 means 2 s.
	Max time.Duration
	// Deadline is the operation deadline: once a request has gone this
	// long without progress (an answer, a body byte moved), counting
	// every attempt and the waits between them, it is not resent, and no
	// attempt's wait for a first byte (see [Timeouts]) runs past it. A
	// transfer that is moving is never cut by it, and an attempt that
	// made progress gives its resend a fresh deadline. 0 means
	// [DefaultTimeout]; negative means none.
	Deadline time.Duration
}

// DefaultAttempts is the retry budget of a request when RetryConfig leaves
// it unset: enough that a store failing a third of its requests with 503s,
// resets or stalls still completes all but about 1 in 600,000 of them
// (0.33^12), with at most about 13 s of waiting in all at the default
// backoff.
const DefaultAttempts = 12

// unreachableAttempts and timeoutAttempts bound the attempts of a request
// that failed so: an endpoint that refuses connections, does not resolve
// or stalls is more likely down than briefly unwell, and the user should
// hear so in seconds, not after the whole budget. (A first-byte timeout,
// an endpoint that never answers, is bounded by the operation deadline
// instead; without one it counts as a stall does.)
const (
	unreachableAttempts = 3
	timeoutAttempts     = 3
)

// Retry returns a backend that resends a request to b when it fails with an
// error [IsRetryable] accepts, waiting a random time between zero
// and min(Max, Base·2ⁱ) before resend i+1 ("full jitter", so that clients
// throttled together do not come back together). Precondition failures,
// missing keys, not-modified answers to GetOptions.IfNoneMatch and the
// caller's context errors are never retried, and a wait is cut short by
// ctx. An endpoint that cannot be reached at all ([ErrUnreachable]), or
// whose transfers stall (a [*TimeoutError] with Stalled set), gets 3 such
// attempts, not the whole budget. A request that makes no progress for
// RetryConfig.Deadline ([DefaultTimeout], 15 s), all attempts and waits
// counted, is not resent: an endpoint that accepts connections and never
// answers fails within it. When the budget or the deadline runs out the
// error is an [*AttemptsError] that lists every attempt's failure.
//
// What is resent:
//
//   - Get, Stat and unconditional Put and Delete, which are idempotent. A
//     Put body is sought back to where it stood when Put was called.
//   - A Get body that breaks, stalls past the [Timeout] or ends before its
//     last byte is resumed where it broke: after N bytes, a ranged Get of
//     the rest, pinned to the version first read (GetOptions.IfMatch), so
//     an object replaced meanwhile fails the read with ErrPrecondition
//     rather than splicing two versions. The caller sees one unbroken body.
//   - A create-if-absent Put of a content-named key (Cond.ContentNamed:
//     the key is the hash of the bytes, so whatever is stored there is
//     this write). After a failure Retry first asks the store (Stat): a
//     key now present with the write's size is the write done, or a peer's
//     identical one, and comes back as ErrPrecondition ("already stored"),
//     as the store itself would have answered; otherwise the write is
//     resent. This also settles a store that answers a duplicate create
//     with a reset instead of 412.
//   - List, only while no page has reached fn: after that a restart would
//     hand fn pages twice. An error returned by fn is never retried.
//
// Any other conditional write (Cond.IfMatch, a conditional Delete, IfAbsent
// on a key that does not name its bytes) is sent once. A retryable failure
// may have come after the store applied it, and a blind resend would then
// fail its own precondition (IfAbsent, or IfMatch on the version it just
// replaced) and report a conflict that is not one, or, worse, succeed on
// top of a concurrent writer's change. It comes back as
// [ErrOutcomeUnknown], still retryable; the caller settles it by reading
// the key back, as the syncer's commit does with the manifest.
func Retry(b Backend, cfg RetryConfig) Backend {
	if cfg.Attempts < 1 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.Base <= 0 {
		cfg.Base = 50 * time.Millisecond
	}
	if cfg.Max <= 0 {
		cfg.Max = 2 * time.Second
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = DefaultTimeout
	}
	return &retrying{Backend: b, cfg: cfg, sleep: backoff.Sleep}
}

// retrying embeds the inner backend so Capabilities and Close pass through
// untouched.
type retrying struct {
	Backend
	cfg RetryConfig
	// sleep waits between attempts; tests replace it to run without
	// waiting and to see the chosen backoffs.
	sleep func(ctx context.Context, d time.Duration) error
}

// Unwrap returns the wrapped backend.
func (r *retrying) Unwrap() Backend { return r.Backend }

// backoff returns the wait before resend i+1 (i counts from 0).
func (r *retrying) backoff(i int) time.Duration {
	return backoff.Exp{Base: r.cfg.Base, Max: r.cfg.Max}.Wait(i)
}

// exhausted reports whether a request that failed with failures may not
// be sent again.
func (r *retrying) exhausted(failures []error) bool {
	if len(failures) >= r.cfg.Attempts {
		return true
	}
	unreachable, timeouts := 0, 0
	for _, err := range failures {
		switch {
		case errors.Is(err, ErrUnreachable):
			unreachable++
		case errors.Is(err, ErrTimeout):
			var te *TimeoutError
			if r.cfg.Deadline < 0 || !errors.As(err, &te) || te.Stalled {
				timeouts++
			}
		}
	}
	return unreachable >= unreachableAttempts || timeouts >= timeoutAttempts
}

// AttemptsError is returned by [Retry] when a request failed on every
// attempt its budget allowed, or could not be resent. It says how many
// attempts were made and why each failed; it unwraps to the last failure,
// so errors.Is and [IsRetryable] see what the store last answered.
type AttemptsError struct {
	Op, Key string
	// Failures holds each attempt's error, in order.
	Failures []error
	// Stopped, if set, is why the request was not resent (a body that
	// cannot be rewound, pages already delivered); nil means the budget
	// ran out.
	Stopped error
}

func (e *AttemptsError) Error() string {
	var sb strings.Builder
	n := len(e.Failures)
	if e.Stopped != nil {
		fmt.Fprintf(&sb, "%s %q: not retried after %d attempt(s) (%v):", e.Op, e.Key, n, e.Stopped)
	} else {
		fmt.Fprintf(&sb, "%s %q: gave up after %d attempts:", e.Op, e.Key, n)
	}
	// Attempts that failed alike are named once, as [1-3]: a store that
	// cannot be reached says so three times in the same words.
	for i := 0; i < n; {
		msg, j := cause(e.Failures[i]), i+1
		for j < n && cause(e.Failures[j]) == msg {
			j++
		}
		if j-i > 1 {
			fmt.Fprintf(&sb, " [%d-%d] %s", i+1, j, msg)
		} else {
			fmt.Fprintf(&sb, " [%d] %s", i+1, msg)
		}
		i = j
	}
	return sb.String()
}

// Unwrap returns the last attempt's failure.
func (e *AttemptsError) Unwrap() error { return e.Failures[len(e.Failures)-1] }

// cause is an attempt's failure without the op and key the summary names.
func cause(err error) string {
	var be *Error
	if errors.As(err, &be) && be.Err != nil {
		return be.Err.Error()
	}
	return err.Error()
}

// do sends a request until it succeeds, fails for good, or runs out of
// attempts, deadline or context. send is given the context of the
// attempt, which carries the operation deadline. again, if set, readies
// the request to be sent once more after failure err, settles it
// (returning errSettled), or says why it cannot be resent; it runs before
// the wait so a request that cannot be resent does not wait for nothing.
func (r *retrying) do(ctx context.Context, op, key string, send func(ctx context.Context) error, again func(err error) error) error {
	clock := newClock(r.cfg.Deadline)
	actx := withClock(ctx, clock)
	var failures []error
	for i := 0; ; i++ {
		clock.begin()
		err := send(actx)
		if err == nil || !IsRetryable(err) || ctx.Err() != nil || ctx.Value(sendOnceKey{}) != nil {
			return err
		}
		clock.ended()
		failures = append(failures, err)
		if r.exhausted(failures) {
			if i == 0 {
				return err
			}
			return &AttemptsError{Op: op, Key: key, Failures: failures}
		}
		if again != nil {
			if aerr := again(err); aerr == errSettled {
				return nil
			} else if aerr != nil {
				return &AttemptsError{Op: op, Key: key, Failures: failures, Stopped: aerr}
			}
		}
		wait := r.backoff(i)
		if clock.expired(wait) {
			return &AttemptsError{Op: op, Key: key, Failures: failures, Stopped: clock.err()}
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w while waiting to retry; last failure: %v", serr, err)
		}
	}
}

type sendOnceKey struct{}

// SendOnce returns a context under which Retry sends each request once: a
// best-effort write (a hint a reader never depends on) that is not worth
// a wait, and whose retries would only crowd a store's per-object limit.
func SendOnce(ctx context.Context) context.Context {
	return context.WithValue(ctx, sendOnceKey{}, true)
}

// errSettled, from an again function, ends a retry loop in success: the
// store showed that the request's effect is already there.
var errSettled = errors.New("settled")

// unknown marks a retryable failure of a conditional write that Retry
// does not resend.
func unknown(op, key string, err error) error {
	if !IsRetryable(err) {
		return err
	}
	return fmt.Errorf("%s %q: conditional write sent once, %w: %w", op, key, ErrOutcomeUnknown, err)
}

func (r *retrying) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	if cond.IfMatch != "" || cond.IfAbsent && !cond.ContentNamed {
		info, err := r.Backend.Put(ctx, key, body, size, cond)
		return info, unknown("put", key, err)
	}
	// The body need not start at offset 0; a resend must start where the
	// first attempt did. The start is taken when the store first touches
	// the body, so a request refused before any I/O never seeks it.
	rb := &rewindable{ReadSeeker: body}
	var info ObjectInfo
	var present error // set when a Stat settled the write
	err := r.do(ctx, "put", key, func(actx context.Context) (err error) {
		info, err = r.Backend.Put(actx, key, rb, size, cond)
		return err
	}, func(failed error) error {
		if cond.ContentNamed {
			// Ask before resending: the write may have landed (a lost
			// acknowledgement), or the store may answer a duplicate
			// create with a reset rather than 412. A failed Stat settles
			// nothing; the resend is safe either way.
			if st, serr := r.Backend.Stat(ctx, key); serr == nil && st.Size == size {
				info = st
				present = fmt.Errorf("put %q: %w: already stored with the same size (found by stat after: %v)", key, ErrPrecondition, cause(failed))
				return errSettled
			}
		}
		return rb.rewind()
	})
	switch {
	case err != nil:
		return ObjectInfo{}, err
	case present != nil && cond.IfAbsent:
		return ObjectInfo{}, present
	}
	return info, nil
}

// rewindable records where a Put body stood when the store first read or
// sought it, so a resend can start there again.
type rewindable struct {
	io.ReadSeeker
	touched bool
	start   int64
	err     error
}

func (b *rewindable) mark() {
	if !b.touched {
		b.touched = true
		b.start, b.err = b.ReadSeeker.Seek(0, io.SeekCurrent)
	}
}

func (b *rewindable) Read(p []byte) (int, error) {
	b.mark()
	return b.ReadSeeker.Read(p)
}

func (b *rewindable) Seek(offset int64, whence int) (int64, error) {
	b.mark()
	return b.ReadSeeker.Seek(offset, whence)
}

// rewind readies the body for a resend, or says why it cannot be.
func (b *rewindable) rewind() error {
	switch {
	case !b.touched:
		return nil
	case b.err != nil:
		return b.err
	}
	_, err := b.ReadSeeker.Seek(b.start, io.SeekStart)
	return err
}

func (r *retrying) Delete(ctx context.Context, key string, cond Cond) error {
	if !cond.IsZero() {
		return unknown("delete", key, r.Backend.Delete(ctx, key, cond))
	}
	return r.do(ctx, "delete", key, func(actx context.Context) error { return r.Backend.Delete(actx, key, cond) }, nil)
}

func (r *retrying) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	var info ObjectInfo
	err := r.do(ctx, "stat", key, func(actx context.Context) (err error) {
		info, err = r.Backend.Stat(actx, key)
		return err
	}, nil)
	if err != nil {
		return ObjectInfo{}, err
	}
	return info, nil
}

func (r *retrying) List(ctx context.Context, prefix string, opts ListOptions, fn func([]ObjectInfo) error) error {
	delivered := false
	var fnErr error
	err := r.do(ctx, "list", prefix, func(actx context.Context) error {
		return r.Backend.List(actx, prefix, opts, func(page []ObjectInfo) error {
			delivered = true
			fnErr = fn(page)
			return fnErr
		})
	}, func(error) error {
		if delivered {
			return errPagesDelivered
		}
		return nil
	})
	if fnErr != nil {
		// The caller's own error, returned exactly as fn gave it.
		return fnErr
	}
	return err
}

// errPagesDelivered explains why a failed List was not restarted.
var errPagesDelivered = errors.New("listing already delivered pages")
