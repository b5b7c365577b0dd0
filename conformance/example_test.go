package conformance_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/conformance"
)

// A backend author's whole hook: three test functions in the store's own
// package run the backend contract, the syncer scenarios and the
// model-based test on fresh stores from a factory. Replace mem.New with
// the store's constructor (behind backend.Portable, as backend.Open
// returns every store).
func Example() {
	_ = func(t *testing.T) {
		newStore := func(t *testing.T) backend.Backend { return backend.Portable(mem.New()) }
		conformance.RunBackend(t, newStore)
		conformance.RunSyncer(t, newStore)
		conformance.RunSyncerModel(t, newStore, conformance.ModelBudget{Checks: 20})
	}
}
