package fs_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/conformance"
	"github.com/siltsync/silt/internal/silttest"
)

func TestConformance(t *testing.T) {
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		b, err := fs.New(silttest.TempBucket(t))
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// TestSyncer_Model runs the model-based syncer test on directories as
// buckets (a small budget; SILT_MODEL_BUDGET raises it).
func TestSyncer_Model(t *testing.T) {
	conformance.RunSyncerModel(t, func(t *testing.T) backend.Backend {
		b, err := fs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, conformance.ModelBudget{Checks: 10, Steps: 15})
}
