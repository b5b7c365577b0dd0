// Package backoff holds the waiting every retry loop in silt shares: a
// sleep that a context ends early, and jittered exponential backoff. One
// copy, so the backend's retry layer, the index's commit loop and the
// lock's polling cannot drift apart in how they wait.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits d, or until ctx is done, and returns ctx's error if it ended
// first. A d of zero or less still reports a done ctx, so a caller never
// sends a request on a context already cancelled.
func Sleep(ctx context.Context, d time.Duration) error {
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

// Exp is full-jitter exponential backoff: the wait before retry i
// (counting from 0) is uniform over [0, Cap(i)], where the cap starts at
// Base and doubles with each retry up to Max. Full jitter spreads writers
// that collided, so they do not collide again in step.
type Exp struct {
	Base time.Duration // cap before the first retry; must be positive
	Max  time.Duration // largest cap; must be at least Base
}

// Cap returns the bound of the wait before retry i.
func (e Exp) Cap(i int) time.Duration {
	limit := e.Base
	for ; i > 0 && limit < e.Max; i-- {
		limit *= 2
	}
	return min(limit, e.Max)
}

// Wait returns a wait before retry i, uniform over [0, Cap(i)].
func (e Exp) Wait(i int) time.Duration {
	return time.Duration(rand.Int64N(int64(e.Cap(i)) + 1))
}

// Spread returns d spread uniformly over [d/2, 3d/2], so pollers that
// started together stop polling in step. A d of zero or less is 0.
func Spread(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d+1)
}
