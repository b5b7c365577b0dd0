package syncer

import (
	"context"

	"github.com/siltsync/silt/index"
)

// Migrate turns the bucket (or namespace) this cache syncs with into the
// log of deltas, online: see [index.Migrate]. Peers need not stop; the
// cache's next push commits in the log.
func (s *Syncer) Migrate(ctx context.Context, opts index.MigrateOptions) (index.MigrateReport, error) {
	return index.Migrate(ctx, s.root, opts)
}
