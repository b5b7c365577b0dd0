package stores_test

import (
	"slices"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/stores"
)

// TestStores_Import_RegistersExactlyTheListedSchemes keeps the list in the
// doc and Schemes true to what the import registers.
func TestStores_Import_RegistersExactlyTheListedSchemes(t *testing.T) {
	if got := backend.Schemes(); !slices.Equal(got, stores.Schemes) {
		t.Errorf("backend.Schemes() = %q, want stores.Schemes %q", got, stores.Schemes)
	}
}
