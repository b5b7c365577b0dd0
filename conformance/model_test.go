package conformance

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/seal"
	"github.com/siltsync/silt/internal/crypt"
)

// The fixed budget of `go test ./...`; SILT_MODEL_BUDGET=N raises the
// sequences per mode (see RELIABILITY.md).
var modelBudget = ModelBudget{Checks: 40, Steps: 20}

func TestSyncerModel_Mem(t *testing.T) {
	RunSyncerModel(t, func(t *testing.T) backend.Backend { return mem.New() }, modelBudget)
}

func TestSyncerModel_FS(t *testing.T) {
	RunSyncerModel(t, func(t *testing.T) backend.Backend {
		b, err := fs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, modelBudget)
}

// The model through silt serve, at a smaller budget in `go test` (the
// doorway adds a socket round trip per call); .ci/run raises it.
func TestSyncerModel_Served(t *testing.T) {
	RunSyncerModelServed(t, func(t *testing.T) backend.Backend { return mem.New() }, ModelBudget{Checks: 10, Steps: 20})
}

// The model on an encrypted bucket (backend/seal over mem): every cache,
// older silt, outside actor and gc sees the bucket through the one
// layer, as the command line and hosts open it with a passphrase.
func TestSyncerModel_Sealed(t *testing.T) {
	RunSyncerModel(t, func(t *testing.T) backend.Backend {
		s, _, err := seal.Init(t.Context(), mem.New(), []byte("model passphrase"), crypt.TestKDFParams, "model")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, ModelBudget{Checks: 20, Steps: 20})
}
