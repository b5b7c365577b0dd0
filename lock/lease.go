package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/backoff"
)

// Lease is one acquisition of a Lock, kept alive by a heartbeat until
// Release or loss. Its methods are safe for concurrent use.
type Lease struct {
	l     *Lock
	nonce string
	token uint64

	ctx    context.Context
	cancel context.CancelCauseFunc
	lost   chan struct{}
	lose   sync.Once

	stop     chan struct{}      // closed by Release to end the heartbeat
	stopOnce sync.Once          //
	hbCancel context.CancelFunc // cancels the heartbeat's in-flight request
	done     chan struct{}      // closed when the heartbeat goroutine has returned

	// rec and ver are the body and version this holder wrote last. The
	// heartbeat goroutine owns them until done is closed, Release after.
	rec record
	ver backend.Version

	mu       sync.Mutex // serialises Release
	released bool
}

func (l *Lock) newLease(ctx context.Context, rec record, ver backend.Version, sent time.Time) *Lease {
	le := &Lease{l: l, nonce: rec.Nonce, token: rec.Token, rec: rec, ver: ver,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	le.ctx, le.cancel = context.WithCancelCause(ctx)
	// The heartbeat outlives ctx: the lock is held until Release.
	hbctx, hbCancel := context.WithCancel(context.WithoutCancel(ctx))
	le.hbCancel = hbCancel
	// A waiter starts its TTL no earlier than our write landed, which is
	// after it was sent: sent+TTL is when a takeover may first happen.
	go le.heartbeat(hbctx, sent.Add(l.ttl))
	return le
}

// Token returns the fencing token of this acquisition. Tokens of one key
// increase strictly from one acquisition to the next (on backends with
// compare-and-swap; see the package documentation), so a store that
// remembers the highest token it accepted can refuse a paused ex-holder.
func (le *Lease) Token() uint64 { return le.token }

// Nonce returns the random name of this acquisition, as Info.Nonce shows
// it to others and ForceRelease expects it.
func (le *Lease) Nonce() string { return le.nonce }

// Lost is closed when the lease is lost: another client took the lock
// over, it was force-released, or heartbeats failed until it could have
// been taken. It fires no later than a waiter may take over, give or take
// the difference in rate between the two machines' clocks. Release closes
// it too when it finds the lock no longer held under this lease.
func (le *Lease) Lost() <-chan struct{} { return le.lost }

// Context returns a context derived from Acquire's, cancelled when the
// lease is lost (with cause ErrLost) or released.
func (le *Lease) Context() context.Context { return le.ctx }

// isLost reports a loss seen through either signal: markLost cancels the
// context before it closes lost, so fn may see its context end with cause
// ErrLost a moment before lost closes. The channel still counts for a
// context whose parent was cancelled first, keeping its own cause.
func (le *Lease) isLost() bool {
	select {
	case <-le.lost:
		return true
	default:
		return errors.Is(context.Cause(le.ctx), ErrLost)
	}
}

func (le *Lease) markLost() {
	le.lose.Do(func() {
		// Cancel first: whoever sees Lost closed must find the context
		// already cancelled with cause ErrLost.
		le.cancel(ErrLost)
		close(le.lost)
	})
}

// Release stops the heartbeat and frees the lock if this lease still
// holds it. It never disturbs a later holder: after a loss it finds the
// lock someone else's and leaves it. It is idempotent; after an error it
// may be called again, and otherwise the lock expires after its TTL.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.released {
		return nil
	}
	le.cancel(nil)
	le.stopOnce.Do(func() {
		close(le.stop)
		le.hbCancel()
	})
	<-le.done
	held, err := le.l.proto.release(ctx, le.ver, le.rec)
	if err != nil {
		return fmt.Errorf("lock %q: release: %w", le.l.key, err)
	}
	if !held {
		// Force-released or taken over before a heartbeat noticed: Lost
		// tells a caller that releases on someone's behalf.
		le.markLost()
	}
	le.released = true
	return nil
}

// heartbeat rewrites the record every TTL/3 until stopped or lost.
// deadline is when a waiter may first take over if no beat lands.
func (le *Lease) heartbeat(ctx context.Context, deadline time.Time) {
	defer close(le.done)
	l := le.l
	wait := l.ttl / 3
	for {
		if !le.pause(wait) {
			return
		}
		sent := l.clock.Now()
		le.rec.Beat++
		le.rec.HeartbeatAt = sent.UTC().Format(time.RFC3339Nano)
		res, ok := le.beatOnce(ctx, deadline)
		if !ok {
			return
		}
		switch {
		case res.err == nil:
			le.ver, deadline, wait = res.ver, sent.Add(l.ttl), l.ttl/3
		case backend.IsRetryable(res.err):
			// Retry while the lease may still be ours; beatOnce declares
			// it lost once the deadline passes.
			wait = max(0, min(backoff.Spread(l.ttl/10), deadline.Sub(l.clock.Now())))
		default:
			// A takeover, a force release, or a permanent failure: in each
			// case this holder can no longer keep the lock.
			le.markLost()
			return
		}
	}
}

type beatResult struct {
	ver backend.Version
	err error
}

// beatOnce sends one heartbeat and waits for it, for the deadline, or for
// Release. A heartbeat stuck in the network must not keep the holder
// believing it holds a lock that waiters are entitled to take, so the
// request runs in its own goroutine and the deadline is watched here. It
// returns false when the heartbeat loop should end.
func (le *Lease) beatOnce(ctx context.Context, deadline time.Time) (beatResult, bool) {
	left := deadline.Sub(le.l.clock.Now())
	if left <= 0 {
		le.markLost()
		return beatResult{}, false
	}
	ch := make(chan beatResult, 1)
	rec, ver := le.rec, le.ver
	go func() {
		v, err := le.l.proto.beat(ctx, ver, rec)
		ch <- beatResult{v, err}
	}()
	watchdog := le.l.clock.NewTimer(left)
	defer watchdog.Stop()
	select {
	case res := <-ch:
		return res, true
	case <-watchdog.C():
		le.markLost()
	case <-le.stop:
	}
	return beatResult{}, false
}

// pause waits d on the lock's clock; it returns false if Release came
// first.
func (le *Lease) pause(d time.Duration) bool {
	t := le.l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-le.stop:
		return false
	}
}
