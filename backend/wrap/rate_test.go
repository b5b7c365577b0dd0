package wrap_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

func TestMutationRate_SecondWriteOfOneObjectWithinPer_IsRefusedUnsent(t *testing.T) {
	ctx := context.Background()
	c := wrap.NewClock(time.Unix(1e9, 0))
	m := mem.New()
	r := wrap.MutationRate(m, wrap.RateConfig{Per: time.Second, Now: c.Now})
	silttest.Put(t, r, "k", "one")
	_, err := backend.PutBytes(ctx, r, "k", []byte("two"), backend.Cond{})
	silttest.WantRetryable(t, err, wrap.ErrObjectRateLimited)
	if got := silttest.Read(t, m, "k"); got != "one" {
		t.Fatalf("refused write reached the store: k = %q", got)
	}
	if err := r.Delete(ctx, "k", backend.Cond{}); !errors.Is(err, wrap.ErrObjectRateLimited) {
		t.Fatalf("delete within Per: %v, want ErrObjectRateLimited", err)
	}
	silttest.Put(t, r, "other", "x") // another object is not limited
	if _, _, err := backend.ReadAll(ctx, r, "k", backend.GetOptions{}, 1<<10); err != nil {
		t.Fatalf("a read is not limited: %v", err)
	}
	c.Advance(time.Second)
	silttest.Put(t, r, "k", "three")
	if got := silttest.Read(t, m, "k"); got != "three" {
		t.Fatalf("k = %q after Per, want three", got)
	}
}

func TestMutationRate_FailedPreconditionStillCounts(t *testing.T) {
	ctx := context.Background()
	c := wrap.NewClock(time.Unix(1e9, 0))
	r := wrap.MutationRate(mem.New(), wrap.RateConfig{Per: time.Second, Now: c.Now})
	silttest.Put(t, r, "k", "one")
	c.Advance(time.Second)
	if _, err := backend.PutBytes(ctx, r, "k", []byte("x"), backend.Cond{IfAbsent: true}); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("create-if-absent over k: %v, want ErrPrecondition", err)
	}
	_, err := backend.PutBytes(ctx, r, "k", []byte("y"), backend.Cond{})
	silttest.WantRetryable(t, err, wrap.ErrObjectRateLimited)
}

func TestMutationRate_StatesItsLimitAsGCSDoes(t *testing.T) {
	r := wrap.MutationRate(mem.New(), wrap.RateConfig{Per: 500 * time.Millisecond})
	if got := r.Capabilities().MaxMutationsPerKeyPerSecond; got != 2 {
		t.Fatalf("MaxMutationsPerKeyPerSecond = %v, want 2 (one per 500 ms)", got)
	}
}
