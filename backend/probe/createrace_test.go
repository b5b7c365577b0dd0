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

func TestCreateRace_AtomicStore_OneWinnerPerRound(t *testing.T) {
	b := backend.Portable(mem.New())
	rep, err := probe.CreateRace(t.Context(), b, "create", 16, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Won != 3 {
		t.Errorf("create race on mem: %+v, want one winner in each of 3 rounds", rep)
	}
	var left []string
	b.List(t.Context(), "create", backend.ListOptions{}, func(p []backend.ObjectInfo) error {
		for _, o := range p {
			left = append(left, o.Key)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("scratch keys left: %v", left)
	}
}

// statThenCreate answers create-if-absent by looking and then writing
// unconditionally, as a store whose create is not atomic does; the first
// two creates of a key both look before either writes.
type statThenCreate struct {
	backend.Backend
	barrier sync.WaitGroup
}

func (b *statThenCreate) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if !cond.IfAbsent {
		return b.Backend.Put(ctx, key, body, size, cond)
	}
	_, err := b.Stat(ctx, key)
	b.barrier.Done()
	b.barrier.Wait()
	if err == nil {
		return backend.ObjectInfo{}, backend.ErrPrecondition
	}
	return b.Backend.Put(ctx, key, body, size, backend.Cond{})
}

func TestCreateRace_LookThenWriteStore_ReportsSeveralWinners(t *testing.T) {
	b := &statThenCreate{Backend: mem.New()}
	b.barrier.Add(2)
	rep, err := probe.CreateRace(context.Background(), b, "create", 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Won != 2 || rep.Wrong != 1 {
		t.Errorf("create race on a look-then-write store: %+v, want 2 creates acknowledged, 1 with other bytes kept", rep)
	}
}
