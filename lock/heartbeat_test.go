package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/lock"
)

// TestLock_ClockSkew_LiveHolderBehind: a holder whose clock is 7 hours
// behind keeps its lock while it heartbeats, though the waiter watches for
// three TTLs; a wall-clock staleness check would steal it at once.
func TestLock_ClockSkew_LiveHolderBehind(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		b := f.new(t)
		hp := newProbe(b)
		now := time.Now()
		p := newPair(t, hp, b, now.Add(-7*time.Hour), now)
		old, err := p.holder.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := p.waiter.Inspect(ctx); err != nil || info.AcquiredAt.After(now.Add(-6*time.Hour)) {
			t.Fatalf("Inspect = %+v, %v; want acquiredAt by the holder's clock", info, err)
		}
		res := acquireAsync(ctx, p.waiter)
		for range 6 {
			napping(t, p.wc, res)
			p.wc.Advance(ttl / 2) // the waiter looks again...
			napping(t, p.wc, res)
			mark := hp.mark()
			beatDue(t, p.hc, old)
			p.hc.Advance(ttl / 3) // ...and the holder heartbeats
			if _, e := hp.waitEvent(t, mark, isPut); e.err != nil {
				t.Fatalf("heartbeat: %v", e.err)
			}
		}
		stillWaiting(t, res, "the holder heartbeat throughout")
		if err := old.Release(ctx); err != nil {
			t.Fatal(err)
		}
		p.wc.Advance(2 * time.Second)
		cur := mustAcquire(t, res)
		if cur.Token() <= old.Token() {
			t.Errorf("token %d not above %d", cur.Token(), old.Token())
		}
		if err := cur.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLock_ClockSkew_DeadHolderAhead: a dead holder whose clock was 7
// hours ahead (its acquiredAt lies in the waiter's future) is taken over
// after one TTL of the waiter's clock, not earlier and not never.
func TestLock_ClockSkew_DeadHolderAhead(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		b := f.new(t)
		now := time.Now()
		p := newPair(t, b, b, now.Add(7*time.Hour), now)
		old, err := p.holder.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res := acquireAsync(ctx, p.waiter)
		napping(t, p.wc, res)
		p.wc.Advance(ttl / 2)
		napping(t, p.wc, res)
		stillWaiting(t, res, "half a TTL of silence")
		p.wc.Advance(ttl/2 + 2*time.Second)
		cur := mustAcquire(t, res)
		beatDue(t, p.hc, old)
		p.hc.Advance(ttl / 3)
		await(t, old.Lost(), "the old holder learns it lost the lock")
		for _, l := range []*lock.Lease{old, cur} {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLock_Acquire_LostReplyAdopted: the creating write lands but its
// reply is lost; the next attempt finds its own nonce and keeps the lock
// (and token 1) instead of waiting a TTL for itself.
func TestLock_Acquire_LostReplyAdopted(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		fb := wrap.Faults(f.new(t))
		fb.Add(wrap.Rule{Verb: wrap.VerbCondPut, Nth: 1, Mode: wrap.FailAfter})
		l := newLock(t, fb, "k.lock", lock.Options{RetryInterval: time.Millisecond, MaxWait: time.Minute})
		lease, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fb.Fired() != 1 {
			t.Fatalf("fault fired %d times; want 1", fb.Fired())
		}
		if lease.Token() != 1 || holderNonce(t, l) != lease.Nonce() {
			t.Errorf("token %d, holder %q; want 1, %q", lease.Token(), holderNonce(t, l), lease.Nonce())
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLease_Heartbeat_LostReplySettled: a heartbeat lands but its reply
// is lost; the retry's CAS fails on the moved version, and a re-read finds
// the holder's own nonce, so the lease carries on.
func TestLease_Heartbeat_LostReplySettled(t *testing.T) {
	forEachCAS(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		fb := wrap.Faults(f.new(t))
		hc := newFakeClock(time.Now())
		l := newLock(t, fb, "k.lock", lock.Options{TTL: ttl, Clock: hc})
		lease, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fb.Add(wrap.Rule{Verb: wrap.VerbCondPut, Nth: 1, Mode: wrap.FailAfter})
		beatDue(t, hc, lease)
		hc.Advance(ttl / 3)
		hc.waitTimer(t, upTo(ttl/10*3/2), lease.Lost()) // the retry pause
		hc.Advance(ttl / 10 * 3 / 2)
		beatDue(t, hc, lease) // back to the regular rhythm
		if fb.Fired() != 1 {
			t.Fatalf("fault fired %d times; want 1", fb.Fired())
		}
		if n := holderNonce(t, l); n != lease.Nonce() {
			t.Fatalf("held by %q; want %q", n, lease.Nonce())
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lease.Lost():
			t.Fatal("lease lost over a heartbeat that landed")
		default:
		}
		if n := holderNonce(t, l); n != "" {
			t.Fatalf("held by %q after release", n)
		}
	})
}

// TestLease_Heartbeat_TransientErrors_LostAtDeadline: heartbeats that keep
// failing transiently are retried until the lease could have been taken,
// and not beyond; a later Release, once the store recovers, still frees
// the lock, which nobody took.
func TestLease_Heartbeat_TransientErrors_LostAtDeadline(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		fb := wrap.Faults(f.new(t))
		start := time.Now()
		hc := newFakeClock(start)
		l := newLock(t, fb, "k.lock", lock.Options{TTL: ttl, Clock: hc})
		lease, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fb.Add(wrap.Rule{}) // every request fails before reaching the store
		beatDue(t, hc, lease)
		hc.Advance(ttl / 3)
		const step = ttl / 10 * 3 / 2
		for hc.waitTimer(t, upTo(step), lease.Lost()) {
			if hc.Now().Sub(start) < ttl && isClosed(lease.Lost()) {
				t.Fatalf("lost %v after acquiring, before the TTL", hc.Now().Sub(start))
			}
			hc.Advance(step)
		}
		if at := hc.Now().Sub(start); at < ttl || at > ttl+step {
			t.Errorf("lost %v after the last successful write; want the TTL, %v", at, ttl)
		}
		if err := lease.Release(ctx); !errors.Is(err, wrap.ErrInjected) {
			t.Fatalf("Release while the store fails: %v; want the injected error", err)
		}
		fb.Reset()
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n := holderNonce(t, l); n != "" {
			t.Fatalf("held by %q after release", n)
		}
	})
}

// TestWithLock_LostDuringFn_ReportsErrLost: fn's context ends with cause
// ErrLost, and WithLock reports the loss although fn succeeded.
func TestWithLock_LostDuringFn_ReportsErrLost(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		hc := newFakeClock(time.Now())
		l := newLock(t, f.new(t), "k.lock", lock.Options{TTL: ttl, Clock: hc})
		v, err := lock.WithLock(context.Background(), l, func(ctx context.Context, lease *lock.Lease) (int, error) {
			if ok, err := l.ForceRelease(context.Background(), lease.Nonce()); !ok || err != nil {
				t.Errorf("ForceRelease = %v, %v", ok, err)
			}
			beatDue(t, hc, lease)
			hc.Advance(ttl / 3)
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrLost) {
				t.Errorf("cause = %v; want ErrLost", cause)
			}
			return 7, nil
		})
		if v != 7 || !errors.Is(err, lock.ErrLost) {
			t.Fatalf("WithLock = %d, %v; want 7 and ErrLost", v, err)
		}
	})
}
