package conformance

import (
	"testing"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/fs" // file:// buckets
)

// TestModel_Outside runs the outside-actor model on a file:// bucket.
func TestModel_Outside(t *testing.T) {
	RunOutsideModel(t, func(t *testing.T) backend.Backend {
		b, err := backend.Open(t.Context(), "file://"+t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, ModelBudget{})
}
