package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// RetryConfig bounds [Retry]. Zero fields take the defaults.
type RetryConfig struct {
	// Attempts is the most times one request is sent, the first included;
	// below 1 means 4.
	Attempts int
	// Base is the backoff cap before the first resend, doubling for each
	// one after; 0 means 100 ms.
	Base time.Duration
	// Max bounds the backoff cap; 0 means 5 s.
	Max time.Duration
}

// Retry returns a backend that resends a request to b when it fails with an
// error [IsRetryable] accepts, waiting a random time between zero
// and min(Max, Base·2ⁱ) before resend i+1 ("full jitter", so that clients
// throttled together do not come back together). Precondition failures,
// missing keys, not-modified answers to GetOptions.IfNoneMatch and context
// errors are never retried, and a wait is cut short by ctx.
//
// What is resent:
//
//   - Get, Stat and unconditional Put and Delete, which are idempotent. A
//     Put body is sought back to where it stood when Put was called. A Get
//     is retried only until it returns a reader; a failure while reading
//     the body reaches the caller.
//   - List, only while no page has reached fn: after that a restart would
//     hand fn pages twice. An error returned by fn is never retried.
//
// A conditional Put or Delete is never resent. A retryable failure may have
// come after the store applied the write, and a blind resend would then
// fail its own precondition (IfAbsent, or IfMatch on the version it just
// replaced) and report a conflict that is not one, or, worse, succeed on top
// of a concurrent writer's change. The error comes back still retryable;
// the caller settles the outcome by re-reading the version, as the syncer's
// commit loop does with the manifest.
func Retry(b Backend, cfg RetryConfig) Backend {
	if cfg.Attempts < 1 {
		cfg.Attempts = 4
	}
	if cfg.Base <= 0 {
		cfg.Base = 100 * time.Millisecond
	}
	if cfg.Max <= 0 {
		cfg.Max = 5 * time.Second
	}
	return &retrying{Backend: b, cfg: cfg, sleep: wait}
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
	limit := r.cfg.Base
	for ; i > 0 && limit < r.cfg.Max; i-- {
		limit *= 2
	}
	limit = min(limit, r.cfg.Max)
	return time.Duration(rand.Int64N(int64(limit) + 1))
}

// do sends a request until it succeeds, fails for good, or runs out of
// attempts or context. again, if set, readies the request to be sent once
// more, or says why it cannot be; it runs before the wait so a request that
// cannot be resent does not wait for nothing.
func (r *retrying) do(ctx context.Context, send func() error, again func() error) error {
	for i := 0; ; i++ {
		err := send()
		if err == nil || !IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		if i+1 >= r.cfg.Attempts {
			if i == 0 {
				return err
			}
			return fmt.Errorf("gave up after %d attempts: %w", i+1, err)
		}
		if again != nil {
			if aerr := again(); aerr != nil {
				return fmt.Errorf("not retried (%v): %w", aerr, err)
			}
		}
		if serr := r.sleep(ctx, r.backoff(i)); serr != nil {
			return fmt.Errorf("%w while waiting to retry; last failure: %v", serr, err)
		}
	}
}

// unresolved marks a retryable failure of a conditional write that Retry
// did not resend; it stays retryable for errors.As.
func unresolved(err error) error {
	if !IsRetryable(err) {
		return err
	}
	return fmt.Errorf("conditional write not retried, outcome unknown: %w", err)
}

func (r *retrying) Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error) {
	var rc io.ReadCloser
	var info ObjectInfo
	err := r.do(ctx, func() (err error) {
		rc, info, err = r.Backend.Get(ctx, key, opts)
		return err
	}, nil)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return rc, info, nil
}

func (r *retrying) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	if !cond.IsZero() {
		info, err := r.Backend.Put(ctx, key, body, size, cond)
		return info, unresolved(err)
	}
	// The body need not start at offset 0; a resend must start where the
	// first attempt did. The start is taken when the store first touches
	// the body, so a request refused before any I/O never seeks it.
	rb := &rewindable{ReadSeeker: body}
	var info ObjectInfo
	err := r.do(ctx, func() (err error) {
		info, err = r.Backend.Put(ctx, key, rb, size, cond)
		return err
	}, rb.rewind)
	if err != nil {
		return ObjectInfo{}, err
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
		return unresolved(r.Backend.Delete(ctx, key, cond))
	}
	return r.do(ctx, func() error { return r.Backend.Delete(ctx, key, cond) }, nil)
}

func (r *retrying) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	var info ObjectInfo
	err := r.do(ctx, func() (err error) {
		info, err = r.Backend.Stat(ctx, key)
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
	err := r.do(ctx, func() error {
		return r.Backend.List(ctx, prefix, opts, func(page []ObjectInfo) error {
			delivered = true
			fnErr = fn(page)
			return fnErr
		})
	}, func() error {
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

// wait blocks for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
