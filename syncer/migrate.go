package syncer

import (
	"context"
	"fmt"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// Migrate turns the bucket (or namespace) this cache syncs with into the
// log of deltas, online: see [index.Migrate]. Peers need not stop; the
// cache's next push commits in the log. On a store with neither
// compare-and-swap nor atomic create it runs under Config.CommitLock, as a
// commit does (none: ErrNoConditionalWrite): the lock makes its writes
// exclusive, so the manifest's swap and the entry's create are a Stat
// then a Put (backend.UnderLock).
func (s *Syncer) Migrate(ctx context.Context, opts index.MigrateOptions) (index.MigrateReport, error) {
	b := s.root
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		if opts.DryRun {
			// Writes nothing, so needs no lock to say what it would write.
			return index.Migrate(ctx, backend.UnderLock(b), opts)
		}
		if s.cfg.CommitLock == nil {
			return index.MigrateReport{}, fmt.Errorf("migrate: %w", ErrNoConditionalWrite)
		}
		_, _, release, err := s.cfg.CommitLock.LockCommit(ctx)
		if err != nil {
			return index.MigrateReport{}, fmt.Errorf("migrate: commit lock: %w", err)
		}
		defer release()
		b = backend.UnderLock(b)
	}
	return index.Migrate(ctx, b, opts)
}
