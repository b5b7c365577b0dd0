package probe_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/probe"
)

func TestConditional_Mem_ReportsEverythingHolds(t *testing.T) {
	b := mem.New()
	rep, err := probe.Conditional(t.Context(), b, "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !rep.IfNoneMatch || !rep.IfMatch || !rep.ConditionalDelete {
		t.Errorf("report = %+v, want every check to hold", rep)
	}
	wantClean(t, b)
}

// ignoring is a store that accepts conditions and ignores them, as an
// S3-compatible store or a proxy that drops the headers does.
type ignoring struct{ backend.Backend }

func (b ignoring) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, _ backend.Cond) (backend.ObjectInfo, error) {
	return b.Backend.Put(ctx, key, body, size, backend.Cond{})
}

func (b ignoring) Delete(ctx context.Context, key string, _ backend.Cond) error {
	return b.Backend.Delete(ctx, key, backend.Cond{})
}

func TestConditional_IgnoredConditions_AreReported(t *testing.T) {
	inner := mem.New()
	rep, err := probe.Conditional(t.Context(), ignoring{inner}, "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.IfNoneMatch || rep.IfMatch || rep.ConditionalDelete {
		t.Errorf("report = %+v, want every check to fail", rep)
	}
	for _, want := range []string{"ignores If-None-Match", "ignores If-Match", "ignores If-Match on a missing key", "ignores If-Match on DELETE"} {
		if !hasProblem(rep, want) {
			t.Errorf("Problems = %q, want one starting %q", rep.Problems, want)
		}
	}
	wantClean(t, inner)
}

// notClaimed is a store that honestly claims no conditional delete.
type notClaimed struct{ backend.Backend }

func (b notClaimed) Capabilities() backend.Capabilities {
	c := b.Backend.Capabilities()
	c.ConditionalDelete = false
	return c
}

func TestConditional_UnclaimedDelete_IsNotProbed(t *testing.T) {
	b := mem.New()
	rep, err := probe.Conditional(t.Context(), notClaimed{b}, "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !rep.IfMatch || rep.ConditionalDelete {
		t.Errorf("report = %+v, want OK with ConditionalDelete false", rep)
	}
	wantClean(t, b)
}

func TestConditional_ExistingScratchKey_IsRefusedAndKept(t *testing.T) {
	b := mem.New()
	if _, err := backend.PutBytes(t.Context(), b, "probe/scratch", []byte("user data"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Conditional(t.Context(), b, "probe/scratch"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("err = %v, want a refusal naming the existing key", err)
	}
	data, _, err := backend.ReadAll(t.Context(), b, "probe/scratch", backend.GetOptions{}, 0)
	if err != nil || string(data) != "user data" {
		t.Errorf("scratch key now %q, %v; want the user's data untouched", data, err)
	}
}

func TestConditional_CancelledContext_FailsAndCleansUp(t *testing.T) {
	b := mem.New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := probe.Conditional(ctx, b, "probe/scratch"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	wantClean(t, b)
}

func hasProblem(rep probe.Report, prefix string) bool {
	for _, p := range rep.Problems {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func wantClean(t *testing.T, b backend.Backend) {
	t.Helper()
	err := b.List(t.Context(), "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			t.Errorf("probe left %q behind", o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
