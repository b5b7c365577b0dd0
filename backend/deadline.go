package backend

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// opClock is the operation deadline of one request under [Retry]: how
// long since the request began or last made progress, and which attempt
// is under way. Retry puts it in the context of each attempt; [Timeouts]
// reads it to bound an attempt's first-byte wait and tells it of
// progress. A nil *opClock is no deadline, and its methods do nothing.
type opClock struct {
	d time.Duration // the deadline; > 0

	mu      sync.Mutex
	last    time.Time // the start, or the last progress
	attempt int       // attempts since last
	moved   bool      // progress during the current attempt
}

type clockKey struct{}

// newClock starts an operation deadline of d; d <= 0 means none (nil).
func newClock(d time.Duration) *opClock {
	if d <= 0 {
		return nil
	}
	return &opClock{d: d, last: time.Now()}
}

func withClock(ctx context.Context, c *opClock) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clockKey{}, c)
}

func clockOf(ctx context.Context) *opClock {
	c, _ := ctx.Value(clockKey{}).(*opClock)
	return c
}

// begin marks the start of an attempt.
func (c *opClock) begin() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moved = false
}

// ended marks the end of a failed attempt: one that made progress gives
// the resend a fresh deadline (a transfer that moved for an hour and then
// stalled is resent, not failed for the hour), one that did not counts
// towards the doubling of the first-byte bound.
func (c *opClock) ended() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moved {
		c.last, c.attempt = time.Now(), 0
		return
	}
	c.attempt++
}

// progress notes that the request moved: an answer arrived, a body byte
// moved.
func (c *opClock) progress() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.moved = time.Now(), true
}

// firstByte is the first-byte bound of the current attempt: base doubled
// for each earlier attempt without progress, and no later than the
// deadline.
func (c *opClock) firstByte(base time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := base << min(c.attempt, 10)
	if left := time.Until(c.last.Add(c.d)); left < d {
		d = max(left, time.Millisecond)
	}
	return d
}

// expired reports whether a resend after a wait of wait would start at
// or past the deadline.
func (c *opClock) expired(wait time.Duration) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !time.Now().Add(wait).Before(c.last.Add(c.d))
}

// err says why a request was not resent.
func (c *opClock) err() error {
	return fmt.Errorf("no progress within the operation deadline of %v; set a longer one with --timeout or ?timeout=", c.d)
}
