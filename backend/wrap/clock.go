package wrap

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
)

// Clock is a fake clock a test controls: it moves only by Advance. A
// [Clocked] backend stamps the objects written through it with its time,
// so a test can age objects by hours without waiting, and give GC the
// same clock (GCOptions.Now) to measure their ages by.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (a negative d is ignored: time
// does not go back).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
}

// Clocked returns a backend whose objects' ModTime is the time of c when
// they were last written through it, in every answer (Put, Get, Stat and
// List). An object written around it keeps the ModTime of the store.
func Clocked(b backend.Backend, c *Clock) backend.Backend {
	return &clocked{Backend: b, c: c, mod: map[string]time.Time{}}
}

// clocked embeds the inner backend so Capabilities and Close pass through.
type clocked struct {
	backend.Backend
	c   *Clock
	mu  sync.Mutex
	mod map[string]time.Time
}

// Unwrap returns the wrapped backend.
func (k *clocked) Unwrap() backend.Backend { return k.Backend }

func (k *clocked) stamp(info backend.ObjectInfo, key string) backend.ObjectInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.mod[key]; ok {
		info.ModTime = t
	}
	return info
}

func (k *clocked) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	rc, info, err := k.Backend.Get(ctx, key, opts)
	return rc, k.stamp(info, key), err
}

func (k *clocked) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	// The stamp is taken before the write lands, so no reader sees the
	// object with a time later than its write.
	now := k.c.Now()
	info, err := k.Backend.Put(ctx, key, body, size, cond)
	if err == nil {
		k.mu.Lock()
		k.mod[key] = now
		k.mu.Unlock()
		info.ModTime = now
	}
	return info, err
}

func (k *clocked) Delete(ctx context.Context, key string, cond backend.Cond) error {
	err := k.Backend.Delete(ctx, key, cond)
	if err == nil {
		k.mu.Lock()
		delete(k.mod, key)
		k.mu.Unlock()
	}
	return err
}

func (k *clocked) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	info, err := k.Backend.Stat(ctx, key)
	return k.stamp(info, key), err
}

func (k *clocked) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	return k.Backend.List(ctx, prefix, opts, func(page []backend.ObjectInfo) error {
		out := make([]backend.ObjectInfo, len(page))
		for i, o := range page {
			out[i] = k.stamp(o, o.Key)
		}
		return fn(out)
	})
}
