package stores_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/blob"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/gcs"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/backend/stores"
)

// TestStores_Import_RegistersExactlyTheListedSchemes keeps the list in the
// doc and Schemes true to what the import registers.
func TestStores_Import_RegistersExactlyTheListedSchemes(t *testing.T) {
	if got := backend.Schemes(); !slices.Equal(got, stores.Schemes) {
		t.Errorf("backend.Schemes() = %q, want stores.Schemes %q", got, stores.Schemes)
	}
}

// TestStores_DriverTypes_AreNoBackend is the compile-time property of
// the portable layer, checked for every shipped driver: a driver type
// implements backend.Driver but not backend.Backend, so no consumer can
// be handed one without backend.Portable (its New does that).
func TestStores_DriverTypes_AreNoBackend(t *testing.T) {
	backendT := reflect.TypeFor[backend.Backend]()
	driverT := reflect.TypeFor[backend.Driver]()
	for _, d := range []any{(*fs.Backend)(nil), (*mem.Backend)(nil), (*s3.Backend)(nil), (*gcs.Backend)(nil), (*blob.Backend)(nil)} {
		typ := reflect.TypeOf(d)
		if !typ.Implements(driverT) || typ.Implements(backendT) {
			t.Errorf("%v: implements Driver %v, Backend %v; want a Driver that is no Backend", typ, typ.Implements(driverT), typ.Implements(backendT))
		}
	}
	if _, ok := any(mem.New()).(*mem.Backend); ok {
		t.Error("mem.New() is the bare driver, want the portable store")
	}
}
