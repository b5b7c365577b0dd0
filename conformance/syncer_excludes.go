package conformance

import (
	"context"
	"testing"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// checkSyncerExcludes_NeverCrossTheBoundary: a host's bookkeeping files,
// excluded by .siltignore and Config, are never uploaded, never deleted
// remotely after a walk of everything, and never written or removed by a
// pull in a cache that excludes them.
func checkSyncerExcludes_NeverCrossTheBoundary(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	hostRules := func(c *syncer.Config) { c.Exclude = []string{".datastore.lock", "**/.lock"} }
	a, b := bk.host(hostRules), bk.host(hostRules)
	a.write(syncer.IgnoreFile, ".namespace.json\n_catalog.db*\n.push-queue.json\n")
	files := modelFiles("aws/ec2", "m1", 4)
	for _, p := range []string{".namespace.json", "_catalog.db", "_catalog.db-wal", ".push-queue.json", ".datastore.lock", "data/m1/.lock"} {
		files[p] = "host bookkeeping " + p
	}
	a.writeMark(files)
	a.mark(syncer.IgnoreFile)
	st := a.push()
	mustEqual(t, "excluded", st.Files.Excluded, 6)
	committed := remotePaths(t, bk)
	for _, p := range []string{".namespace.json", "_catalog.db", "_catalog.db-wal", ".push-queue.json", ".datastore.lock", "data/m1/.lock"} {
		if committed[p] {
			t.Errorf("%s was committed", p)
		}
	}
	// b pulls the rules with the data, then keeps its own bookkeeping.
	b.pull()
	b.write("_catalog.db", "b's own catalog")
	b.write(".datastore.lock", "b's lock")
	a.remove(".namespace.json")
	if err := a.s.MarkAllDirty(); err != nil {
		t.Fatal(err)
	}
	a.mark(".namespace.json")
	mustEqual(t, "deleted after a walk of everything", a.push().Files.Deleted, 0)
	st = b.pull()
	mustEqual(t, "conflicts in b", st.Files.Conflicts, 0)
	if got, _ := b.read("_catalog.db"); got != "b's own catalog" {
		t.Errorf("b's _catalog.db = %q", got)
	}
	if got, ok := b.read(".datastore.lock"); !ok || got != "b's lock" {
		t.Errorf("b's .datastore.lock = %q, %v", got, ok)
	}
}

// remotePaths is the set of committed paths.
func remotePaths(t *testing.T, bk *bucket) map[string]bool {
	t.Helper()
	snap, err := index.OpenSnapshot(context.Background(), bk.store)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	if err := snap.Walk(context.Background(), "", func(p string, _ index.Entry) error { out[p] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
