package conformance

import (
	"context"
	"io"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
)

func TestRunLiveModel_Mem_EveryModePasses(t *testing.T) {
	var names []string
	failed := RunLiveModel(t.Context(), func() (backend.Backend, error) { return mem.New(), nil }, ModelBudget{Checks: 3, Steps: 10}, func(name string, passed, skipped bool, msg string) {
		names = append(names, name)
		if !passed {
			t.Errorf("%s: %s", name, msg)
		}
	})
	if failed != 0 || len(names) != 3 {
		t.Fatalf("failed %d, reports %v", failed, names)
	}
}

// dropsCondWrites reports success for a conditional Put without storing
// it: a store that lies.
type dropsCondWrites struct{ backend.Backend }

func (b dropsCondWrites) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if !cond.IsZero() {
		return backend.ObjectInfo{Key: key, Size: size, Version: "dropped"}, nil
	}
	return b.Backend.Put(ctx, key, body, size, cond)
}

func TestRunLiveModel_DroppedWrites_Fails(t *testing.T) {
	failed := RunLiveModel(t.Context(), func() (backend.Backend, error) { return dropsCondWrites{mem.New()}, nil }, ModelBudget{Checks: 25, Steps: 20}, func(string, bool, bool, string) {}) // -short runs a fifth of the checks: still 5
	if failed == 0 {
		t.Error("the model passed on a backend that drops conditional writes")
	}
}
