package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/backoff"
)

// errBusy means the lock is held by a live holder: wait and look again.
var errBusy = errors.New("lock held")

// waiter is what one Acquire remembers between attempts.
type waiter struct {
	// version is the version of the holder's record last seen, and since
	// is when, by the waiter's own clock, it was first seen. Only their
	// difference decides staleness: no clock of another machine is read.
	version backend.Version
	since   time.Time
	holder  Info  // for the timeout error
	lastErr error // last transient failure, for the timeout error
}

// stale reports whether obs, held by someone else, has gone unchanged for
// longer than the holder's TTL.
func (w *waiter) stale(l *Lock, obs observed) bool {
	now := l.clock.Now()
	w.holder = obs.rec.info()
	if obs.version != w.version {
		w.version, w.since = obs.version, now
		return false
	}
	return now.Sub(w.since) > obs.rec.ttl(l.ttl)
}

// Acquire takes the lock, waiting while a live holder has it, and starts
// the heartbeat that keeps it. It takes a lock nobody refreshed for the
// holder's TTL, by compare-and-swap on the exact version it watched go
// stale. After Options.MaxWait it returns a [*TimeoutError] naming the
// holder. The lease must be released; until then its heartbeat runs.
//
// The lease's context derives from ctx, so it ends when ctx does, but the
// lock itself is held until Release or loss, whatever happens to ctx.
func (l *Lock) Acquire(ctx context.Context) (*Lease, error) {
	// One nonce per Acquire, so a claim whose reply was lost is recognised
	// as ours on the next look.
	nonce, err := newNonce()
	if err != nil {
		return nil, err
	}
	start := l.clock.Now()
	var w waiter
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lease, err := l.attempt(ctx, nonce, &w)
		wait := true
		switch {
		case err == nil:
			return lease, nil
		case errors.Is(err, errBusy):
			w.lastErr = nil
		case backend.IsPrecondition(err):
			wait = false // another claimant won a race: its record is worth reading now
		case backend.IsRetryable(err):
			w.lastErr = err
		default:
			return nil, fmt.Errorf("lock %q: acquire: %w", l.key, err)
		}
		waited := l.clock.Now().Sub(start)
		if l.maxWait < 0 || waited >= l.maxWait {
			return nil, &TimeoutError{Key: l.key, Holder: w.holder, Waited: waited, Err: w.lastErr}
		}
		if wait {
			if err := l.sleep(ctx, min(backoff.Spread(l.retry), l.maxWait-waited)); err != nil {
				return nil, err
			}
		}
	}
}

// attempt looks at the lock once and claims it if it is free, stale, or
// already ours.
func (l *Lock) attempt(ctx context.Context, nonce string, w *waiter) (*Lease, error) {
	obs, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	token := uint64(1)
	if r := obs.rec; r != nil {
		token = r.Token + 1
		switch {
		case obs.heldBy(nonce):
			// Our earlier claim landed though its reply was lost. Claiming
			// it again by CAS refreshes it and settles the token (the same
			// one: nobody else was granted it).
			token = r.Token
		case r.Released:
		case !w.stale(l, obs):
			return nil, errBusy
		}
	}
	rec := l.newRecord(nonce, token)
	sent := l.clock.Now()
	ver, tok, err := l.proto.claim(ctx, obs, rec)
	if err != nil {
		return nil, err
	}
	rec.Token = tok
	return l.newLease(ctx, rec, ver, sent), nil
}

// WithLock acquires l, runs fn under the lease, and releases the lock
// however fn ends. fn gets the lease's context, which is cancelled if the
// lease is lost. If the lease was lost before fn returned, fn's work was
// not exclusive: WithLock then returns an error matching ErrLost even when
// fn succeeded, with fn's result, so the caller can decide what to keep.
func WithLock[T any](ctx context.Context, l *Lock, fn func(ctx context.Context, lease *Lease) (T, error)) (result T, err error) {
	lease, err := l.Acquire(ctx)
	if err != nil {
		return result, err
	}
	defer func() {
		if err == nil && lease.isLost() {
			err = fmt.Errorf("lock %q: %w while held", l.key, ErrLost)
		}
		// Release even when ctx is done: leaving the lock to expire would
		// block every other holder for a TTL.
		err = errors.Join(err, lease.Release(context.WithoutCancel(ctx)))
	}()
	return fn(lease.Context(), lease)
}

// LockCommit acquires the lock for one commit and returns its key, the
// fencing token the commit records, and the release function. It makes a
// *Lock usable as syncer.Config.CommitLock for stores without
// compare-and-swap.
func (l *Lock) LockCommit(ctx context.Context) (key string, token uint64, release func(), err error) {
	lease, err := l.Acquire(ctx)
	if err != nil {
		return "", 0, nil, err
	}
	release = func() {
		// Released even when ctx was cancelled: the commit is over either way.
		_ = lease.Release(context.WithoutCancel(ctx))
	}
	return l.key, lease.Token(), release, nil
}
