package conformance

import (
	"context"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// F30 (testdata/model-findings.md): after a migration from format 4 whose
// log no longer reached back to its genesis (an earlier gc had taken its
// first entries), gc took the legacy format-4 entries below the
// migration by the grace period alone. A reader holding one of them, its
// observation fresh, read the next entry as absent, took "none written"
// for the answer as the log allows for LogTrust, and pulled a state gc
// had just emptied: "shard listed in the manifest but missing", or a
// silent miss of a peer's commit. Legacy entries are log entries: one goes
// only when its successor is old by the log's rule (MinLogGrace), as in
// gc of the log itself.
func TestModel_Regression_GCAfterMigrationFrom4TakesEntryAReaderHolds(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		ctx := context.Background()
		b := bk.host()
		// An older silt's format-4 bucket.
		bk.legacyPush(index.LogFormat, map[string]string{"data/x/1": "1", "data/y/1": "y"})
		bk.legacyPush(index.LogFormat, map[string]string{"data/x/1": "2"})
		b.pull() // b holds seq 2, just observed
		bk.legacyPush(index.LogFormat, map[string]string{"data/y/1": "y3"})
		// What an earlier gc past MinLogGrace does: the log no longer
		// reaches its genesis.
		if err := bk.store.Delete(ctx, index.LogKey(1), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
		if _, err := index.Migrate(ctx, bk.store, index.MigrateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := index.GC(ctx, bk.store, index.GCOptions{OlderThan: 0}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Pull(ctx, syncer.PullOptions{}); err != nil {
			t.Fatalf("pull of the reader that held seq 2: %v", err)
		}
		if got, _ := b.read("data/y/1"); got != "y3" {
			t.Fatalf("after gc, the reader that held seq 2 has data/y/1 = %q, want the peer's y3", got)
		}
	})
}
