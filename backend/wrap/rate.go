package wrap

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
)

// ErrObjectRateLimited is the retryable error [MutationRate] answers with
// when one object is mutated again too soon: Google Cloud Storage's 429
// for more than about one write per second to a single object name.
var ErrObjectRateLimited = errors.New("object mutated too often (429)")

// RateConfig sets how often [MutationRate] lets one object change.
type RateConfig struct {
	// Per is the least time between two mutations (Put or Delete,
	// conditional or not) of one key; GCS documents about 1 s.
	Per time.Duration
	// Now is the clock (time.Now when nil); a test passes a [Clock]'s.
	Now func() time.Time
}

// MutationRate returns a backend that refuses, with a retryable
// ErrObjectRateLimited and without sending it, a mutation of a key that
// was last mutated less than cfg.Per ago, as GCS does for a single
// object. Every mutation sent counts, whether or not the store applied
// it (a failed precondition is still a write attempt). Reads and other
// keys are untouched, so a store emulated this way caps a protocol whose
// commits all mutate one object at 1/Per commits a second in total. Its
// Capabilities state the limit (MaxMutationsPerKeyPerSecond), as the GCS
// driver does.
func MutationRate(b backend.Backend, cfg RateConfig) backend.Backend {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &rated{layer: b, cfg: cfg, last: map[string]time.Time{}}
}

type rated struct {
	layer
	cfg  RateConfig
	mu   sync.Mutex
	last map[string]time.Time
}

// Capabilities states the limit, as the GCS driver states GCS's, so that
// the commit loop paces its retries by it.
func (r *rated) Capabilities() backend.Capabilities {
	c := r.layer.Capabilities()
	if r.cfg.Per > 0 {
		c.MaxMutationsPerKeyPerSecond = float64(time.Second) / float64(r.cfg.Per)
	}
	return c
}

// Unwrap returns the wrapped backend.
func (r *rated) Unwrap() backend.Backend { return r.layer }

// admit reserves key's next mutation, or refuses it.
func (r *rated) admit(op, key string) error {
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.last[key]; ok && now.Sub(t) < r.cfg.Per {
		return backend.Retryable(op, key, ErrObjectRateLimited)
	}
	r.last[key] = now
	return nil
}

func (r *rated) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := r.admit("put", key); err != nil {
		return backend.ObjectInfo{}, err
	}
	return r.layer.Put(ctx, key, body, size, cond)
}

func (r *rated) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := r.admit("delete", key); err != nil {
		return err
	}
	return r.layer.Delete(ctx, key, cond)
}
