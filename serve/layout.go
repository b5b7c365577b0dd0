package serve

import (
	"path"

	"github.com/siltsync/silt/index"
)

// DefaultLazy selects files named "raw" under "data/": the large payloads
// of silt's reference host layout. The engine builds in no layout; a host
// that wants this one sets syncer.Config.Lazy to it (silt serve does, and
// the conformance model predicts MetadataOnly pulls by it).
func DefaultLazy(p string) bool {
	return index.Under(p, "data") && (p == "raw" || path.Base(p) == "raw")
}
