package wrap_test

import (
	"context"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
)

func TestClocked_ModTime_FromFakeClock(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := wrap.NewClock(start)
	b := wrap.Clocked(mem.New(), c)
	if _, err := backend.PutBytes(ctx, b, "a", []byte("x"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	c.Advance(3 * time.Hour)
	if _, err := backend.PutBytes(ctx, b, "b", []byte("y"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	info, err := b.Stat(ctx, "a")
	if err != nil || !info.ModTime.Equal(start) {
		t.Fatalf("stat a: %v %v, want %v", info.ModTime, err, start)
	}
	got := map[string]time.Time{}
	err = b.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			got[o.Key] = o.ModTime
		}
		return nil
	})
	if err != nil || !got["a"].Equal(start) || !got["b"].Equal(start.Add(3*time.Hour)) {
		t.Fatalf("list: %v %v", got, err)
	}
	if !c.Now().Equal(start.Add(3 * time.Hour)) {
		t.Fatalf("clock at %v", c.Now())
	}
	c.Advance(-time.Hour)
	if !c.Now().Equal(start.Add(3 * time.Hour)) {
		t.Fatal("a negative Advance moved the clock")
	}
}
