package syncer_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/conformance"
)

func memBackend(t *testing.T) backend.Backend { return mem.New() }

func fsBackend(t *testing.T) backend.Backend {
	b, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSyncer_Conformance_Mem(t *testing.T) { conformance.RunSyncer(t, memBackend) }

func TestSyncer_Conformance_FS(t *testing.T) { conformance.RunSyncer(t, fsBackend) }

// Seed 2590/3198 at the scale: the same requests for a scoped pull
// in a namespace of 1k and of 50k entries, with the default shard bound.
func TestSeed2590_ScopedPullIsBoundedByScope_50k(t *testing.T) {
	sizes := []int{1_000, 50_000}
	if testing.Short() {
		sizes = []int{1_000, 5_000}
	}
	conformance.CheckScopedPullBounded(t, memBackend, sizes, 0)
}
