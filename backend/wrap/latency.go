package wrap

import (
	"context"
	"io"
	"maps"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/backoff"
)

// LatencyConfig sets the delay [Latency] adds before each request.
type LatencyConfig struct {
	// Delay is added before every request of a verb not in PerVerb.
	Delay time.Duration
	// PerVerb overrides Delay for the verbs it lists. A conditional Put is
	// VerbCondPut and does not fall back to the VerbPut entry, as in
	// [Counting].
	PerVerb map[Verb]time.Duration
}

// Latency returns a backend that waits before passing each request to b,
// and before each List page after the first, since every page is a round
// trip of its own. A wait cut short by ctx returns ctx.Err() and the request
// is never sent, so a cancelled benchmark or test does not leave writes
// behind. Body bytes are not delayed.
func Latency(b backend.Backend, cfg LatencyConfig) backend.Backend {
	// Copy the map so a caller editing it later cannot race with requests.
	cfg.PerVerb = maps.Clone(cfg.PerVerb)
	return &latency{Backend: b, cfg: cfg}
}

// latency embeds the inner backend so Capabilities and Close pass through
// untouched.
type latency struct {
	backend.Backend
	cfg LatencyConfig
}

// Unwrap returns the wrapped backend.
func (l *latency) Unwrap() backend.Backend { return l.Backend }

func (l *latency) delay(v Verb) time.Duration {
	if d, ok := l.cfg.PerVerb[v]; ok {
		return d
	}
	return l.cfg.Delay
}

func (l *latency) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if err := backoff.Sleep(ctx, l.delay(VerbGet)); err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	return l.Backend.Get(ctx, key, opts)
}

func (l *latency) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := backoff.Sleep(ctx, l.delay(putVerb(cond))); err != nil {
		return backend.ObjectInfo{}, err
	}
	return l.Backend.Put(ctx, key, body, size, cond)
}

func (l *latency) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := backoff.Sleep(ctx, l.delay(VerbDelete)); err != nil {
		return err
	}
	return l.Backend.Delete(ctx, key, cond)
}

func (l *latency) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if err := backoff.Sleep(ctx, l.delay(VerbStat)); err != nil {
		return backend.ObjectInfo{}, err
	}
	return l.Backend.Stat(ctx, key)
}

func (l *latency) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	d := l.delay(VerbList)
	if err := backoff.Sleep(ctx, d); err != nil {
		return err
	}
	first := true
	return l.Backend.List(ctx, prefix, opts, func(page []backend.ObjectInfo) error {
		// The first page's round trip was paid before the listing started.
		if !first {
			if err := backoff.Sleep(ctx, d); err != nil {
				return err
			}
		}
		first = false
		return fn(page)
	})
}

// putVerb names a Put the way [Counting] does.
func putVerb(cond backend.Cond) Verb {
	if cond.IsZero() {
		return VerbPut
	}
	return VerbCondPut
}
