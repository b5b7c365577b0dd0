package probe_test

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/probe"
)

func TestRace_AtomicStore_KeepsEveryUpdate(t *testing.T) {
	rep, err := probe.Race(t.Context(), backend.Portable(mem.New()), "race", 16, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Got != 48 {
		t.Errorf("race on mem: %+v, want 48 of 48", rep)
	}
}

// checkThenWrite answers If-Match by comparing the version and then writing
// unconditionally, as a store whose precondition is not atomic does; the
// first two conditional writes both pass the check before either writes.
type checkThenWrite struct {
	backend.Backend
	barrier sync.WaitGroup
	mu      sync.Mutex
	n       int
}

func (b *checkThenWrite) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if cond.IfMatch == "" {
		return b.Backend.Put(ctx, key, body, size, cond)
	}
	info, err := b.Stat(ctx, key)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	if info.Version != cond.IfMatch {
		return backend.ObjectInfo{}, backend.ErrPrecondition
	}
	b.mu.Lock()
	b.n++
	first := b.n <= 2
	b.mu.Unlock()
	if first {
		b.barrier.Done()
		b.barrier.Wait() // both writers have passed the check
	}
	return b.Backend.Put(ctx, key, body, size, backend.Cond{})
}

func TestRace_CheckThenWriteStore_LosesAnUpdate(t *testing.T) {
	b := &checkThenWrite{Backend: mem.New()}
	b.barrier.Add(2)
	rep, err := probe.Race(t.Context(), b, "race", 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Got != 1 || rep.Want != 2 {
		t.Errorf("race on a check-then-write store: %+v, want 1 of 2 kept", rep)
	}
}
