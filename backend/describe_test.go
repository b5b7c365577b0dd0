package backend_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
)

// TestDescribe_ThroughLayers_JoinsPrefixes checks Describe finds the
// driver under Open's layers and joins the Prefixed layers above it (the
// URL's path, then a namespace) onto its prefix.
func TestDescribe_ThroughLayers_JoinsPrefixes(t *testing.T) {
	b, err := backend.Open(t.Context(), "mem://describe/p")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d, ok := backend.Describe(backend.Prefixed(b, "team-a"))
	if !ok || d.Scheme != "mem" || d.Bucket != "describe" || d.Prefix != "p/team-a/" || d.Credentials == "" {
		t.Errorf("Describe = %+v, %v; want mem bucket describe, prefix p/team-a/", d, ok)
	}
	dir := t.TempDir()
	f, err := backend.Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if d, ok := backend.Describe(f); !ok || d.Scheme != "file" || d.Bucket != dir {
		t.Errorf("Describe(file) = %+v, %v", d, ok)
	}
}

// TestDescribe_NoDescriber_NotOK checks a store that does not describe
// itself is reported as such, not as an empty description.
func TestDescribe_NoDescriber_NotOK(t *testing.T) {
	if _, ok := backend.Describe(bare{mem.New()}); ok {
		t.Error("Describe found a Describer in a store that hides it")
	}
}

// bare hides mem's Describe behind the Backend interface.
type bare struct{ backend.Backend }
