package blob_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/blob"
	"github.com/siltsync/silt/conformance"
)

// TestSyncer_Conformance_AtomicCreateNoCAS runs the syncer suite on a
// gocloud bucket with atomic create but no compare-and-swap (memblob, as
// Azure Blob is): a bucket in the default format commits by the
// create-if-absent of its log entries, so every check runs with no commit
// lock.
func TestSyncer_Conformance_AtomicCreateNoCAS(t *testing.T) {
	conformance.RunSyncer(t, func(t *testing.T) backend.Backend {
		b, _ := newMem(t, blob.Config{AtomicCreate: true, ListAfterWrite: true})
		return b
	})
}

// TestSyncerModel_AtomicCreateNoCAS runs the model-based harness on the
// same store: generated sequences of every operation, gc and migration
// from format 4 beside them, against the oracle.
func TestSyncerModel_AtomicCreateNoCAS(t *testing.T) {
	conformance.RunSyncerModel(t, func(t *testing.T) backend.Backend {
		b, _ := newMem(t, blob.Config{AtomicCreate: true, ListAfterWrite: true})
		return b
	}, conformance.ModelBudget{Checks: 30})
}
