package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/lock"
)

const ttl = 30 * time.Second

// waiterNap selects a waiter's retry timer (RetryInterval 1s, jittered
// to at most 1.5s), as opposed to a heartbeat timer (TTL/3).
var waiterNap = upTo(2 * time.Second)

// pair is a holder and a waiter on one store, each with its own fake
// clock, so a test decides when each acts.
type pair struct {
	hc, wc         *fakeClock
	holder, waiter *lock.Lock
}

func newPair(t *testing.T, hb, wb backend.Backend, hStart, wStart time.Time) pair {
	hc, wc := newFakeClock(hStart), newFakeClock(wStart)
	return pair{hc: hc, wc: wc,
		holder: newLock(t, hb, "k.lock", lock.Options{Holder: "holder", TTL: ttl, Clock: hc}),
		waiter: newLock(t, wb, "k.lock", lock.Options{Holder: "waiter", TTL: ttl, RetryInterval: time.Second, MaxWait: 24 * time.Hour, Clock: wc}),
	}
}

// stillWaiting fails the test if the waiter's Acquire has returned. The
// caller must have seen the waiter asleep (napping) after its last look.
func stillWaiting(t *testing.T, res *pending, why string) {
	t.Helper()
	select {
	case <-res.done:
		t.Fatalf("%s, yet the waiter's Acquire returned: %v", why, res)
	default:
	}
}

func mustAcquire(t *testing.T, res *pending) *lock.Lease {
	t.Helper()
	await(t, res.done, "the waiter's Acquire")
	if res.err != nil {
		t.Fatalf("waiter: %v", res.err)
	}
	return res.lease
}

// TestLease_PausedHolder_TakenOver: a holder whose clock stands still
// (a paused process) sends no heartbeat; the waiter takes over after one
// TTL of its own clock; the holder learns at its next heartbeat, and its
// Release leaves the new holder alone.
func TestLease_PausedHolder_TakenOver(t *testing.T) {
	forEach(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		b := f.new(t)
		now := time.Now()
		p := newPair(t, b, b, now, now)
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
		if cur.Token() <= old.Token() {
			t.Errorf("new holder's token %d not above the paused holder's %d", cur.Token(), old.Token())
		}

		beatDue(t, p.hc, old)
		p.hc.Advance(ttl / 3) // the holder resumes and heartbeats
		await(t, old.Lost(), "the old holder learns it lost the lock")
		if cause := context.Cause(old.Context()); !errors.Is(cause, lock.ErrLost) {
			t.Errorf("lost lease's context cause = %v; want ErrLost", cause)
		}
		if err := old.Release(ctx); err != nil {
			t.Fatalf("Release of a lost lease: %v", err)
		}
		if n := holderNonce(t, p.holder); n != cur.Nonce() {
			t.Fatalf("after the old holder's Release the lock is held by %q; want the new holder %q", n, cur.Nonce())
		}
		select {
		case <-cur.Lost():
			t.Fatal("the new holder's lease was lost")
		default:
		}
		if err := cur.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLease_HeartbeatStuck_LostAtDeadline: a heartbeat request that hangs
// cannot keep the lease; Lost fires when a waiter becomes entitled to
// take over, and the request landing afterwards fails.
func TestLease_HeartbeatStuck_LostAtDeadline(t *testing.T) {
	forEachCAS(t, func(t *testing.T, f factory) {
		ctx := context.Background()
		b := f.new(t)
		hp := newProbe(b)
		now := time.Now()
		p := newPair(t, hp, b, now, now)
		old, err := p.holder.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hp.arm(anyPut)
		beatDue(t, p.hc, old)
		p.hc.Advance(ttl / 3)
		hp.waitHeld(t, 1)
		select {
		case <-old.Lost():
			t.Fatal("lost while the lease is still valid")
		default:
		}
		p.hc.waitTimer(t, eq(2*ttl/3), nil) // the watchdog, due at acquire + TTL
		p.hc.Advance(2 * ttl / 3)
		await(t, old.Lost(), "the old holder learns it lost the lock")

		res := acquireAsync(ctx, p.waiter)
		napping(t, p.wc, res)
		p.wc.Advance(ttl + 2*time.Second)
		cur := mustAcquire(t, res)

		mark := hp.mark()
		hp.release() // the stuck heartbeat lands now
		if _, e := hp.waitEvent(t, mark, isCondPut); e.err == nil || !backend.IsPrecondition(e.err) {
			t.Fatalf("late heartbeat: %v; want a failed precondition", e.err)
		}
		if err := old.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n := holderNonce(t, p.holder); n != cur.Nonce() {
			t.Fatalf("held by %q; want the new holder %q", n, cur.Nonce())
		}
		if err := cur.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLease_HeartbeatRacesTakeover_OneWins holds a heartbeat and a
// takeover on the same version at a gate and lets them go together:
// exactly one lands, and the loser learns it.
func TestLease_HeartbeatRacesTakeover_OneWins(t *testing.T) {
	forEachCAS(t, func(t *testing.T, f factory) {
		var holderWon, waiterWon int
		for range 8 {
			ctx, cancel := context.WithCancel(context.Background())
			pr := newProbe(f.new(t))
			now := time.Now()
			p := newPair(t, pr, pr, now, now)
			old, err := p.holder.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pr.arm(isIfMatch)
			mark := pr.mark()
			res := acquireAsync(ctx, p.waiter)
			napping(t, p.wc, res)
			p.wc.Advance(ttl + 2*time.Second) // the waiter judges the lock stale...
			beatDue(t, p.hc, old)
			p.hc.Advance(ttl / 3) // ...as the holder heartbeats
			pr.waitHeld(t, 2)
			pr.release()
			i, e1 := pr.waitEvent(t, mark, isCondPut)
			_, e2 := pr.waitEvent(t, i+1, isCondPut)
			if (e1.err == nil) == (e2.err == nil) {
				t.Fatalf("racing writes returned %v and %v; want exactly one success", e1.err, e2.err)
			}
			for _, e := range []event{e1, e2} {
				if e.err != nil && !backend.IsPrecondition(e.err) {
					t.Fatalf("losing write: %v; want a failed precondition", e.err)
				}
			}
			if holderNonce(t, p.holder) == old.Nonce() {
				holderWon++
				napping(t, p.wc, res) // the waiter saw the new version and waits on
				cancel()
				if await(t, res.done, "the cancelled Acquire"); !errors.Is(res.err, context.Canceled) {
					t.Fatalf("waiter after losing the race: %v; want to keep waiting until cancelled", res)
				}
				if err := old.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				select {
				case <-old.Lost():
					t.Fatal("the holder won the race but its lease was lost")
				default:
				}
			} else {
				waiterWon++
				cur := mustAcquire(t, res)
				await(t, old.Lost(), "the old holder learns it lost the lock")
				if err := old.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if n := holderNonce(t, p.holder); n != cur.Nonce() {
					t.Fatalf("held by %q; want the waiter %q", n, cur.Nonce())
				}
				if err := cur.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
		}
		t.Logf("holder won %d races, waiter won %d", holderWon, waiterWon)
	})
}
