package lock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/lock"
)

// fakeClock is a manual clock. Timers fire only in Advance, so a test
// decides exactly when a holder heartbeats or a waiter looks again.
type fakeClock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers map[*fakeTimer]bool
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	d  time.Duration
	ch chan time.Time
}

func newFakeClock(start time.Time) *fakeClock {
	c := &fakeClock{now: start, timers: map[*fakeTimer]bool{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) lock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), d: d, ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = true
	c.cond.Broadcast()
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	pending := t.c.timers[t]
	delete(t.c.timers, t)
	t.c.cond.Broadcast()
	return pending
}

// Advance moves the clock on by d and fires every timer now due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
			delete(c.timers, t)
		}
	}
	c.cond.Broadcast()
}

// waitTimer blocks until a pending timer's duration satisfies ok, or done
// is closed; it reports whether it found the timer.
func (c *fakeClock) waitTimer(t *testing.T, ok func(time.Duration) bool, done <-chan struct{}) bool {
	t.Helper()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // wake the wait below when done closes
		select {
		case <-done:
		case <-stop:
		}
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	found := false
	waitCond(t, c.cond, func() bool {
		for tm := range c.timers {
			if ok(tm.d) {
				found = true
				return true
			}
		}
		return isClosed(done)
	}, "a timer to be set")
	return found
}

// waitCond waits on c, whose lock the caller holds, until cond holds. It
// fails the test after hangLimit rather than hang the test binary.
func waitCond(t *testing.T, c *sync.Cond, cond func() bool, what string) {
	t.Helper()
	expired := false // guarded by c.L
	timer := time.AfterFunc(hangLimit, func() {
		c.L.Lock()
		expired = true
		c.Broadcast()
		c.L.Unlock()
	})
	defer timer.Stop()
	for !cond() {
		if expired {
			t.Fatalf("gave up waiting for %s", what)
		}
		c.Wait()
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func eq(d time.Duration) func(time.Duration) bool {
	return func(x time.Duration) bool { return x == d }
}
func upTo(d time.Duration) func(time.Duration) bool {
	return func(x time.Duration) bool { return x <= d }
}
func anyTimer(time.Duration) bool { return true }
