package syncer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// later is a clock two hours ahead: every object written by the test is
// then older than an hour, without sleeping.
func later() time.Time { return time.Now().Add(2 * time.Hour) }

func gcKeys(objs []syncer.GCObject) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func putRaw(t *testing.T, b backend.Backend, key, data string) {
	t.Helper()
	if _, err := backend.PutBytes(context.Background(), b, key, []byte(data), backend.Cond{}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func exists(t *testing.T, b backend.Backend, key string) bool {
	t.Helper()
	ok, err := backend.Exists(context.Background(), b, key)
	if err != nil {
		t.Fatalf("stat %s: %v", key, err)
	}
	return ok
}

// orphanedBucket pushes twice, so the first commit's shard is no longer
// referenced, and adds a data object no entry references.
func orphanedBucket(t *testing.T) (*bucket, *host, []string) {
	t.Helper()
	bk := newBucket(t)
	a := bk.host(shardMax(4))
	a.writeMark(modelFiles("m", "one", 2))
	a.push()
	var before []string
	err := bk.store.List(context.Background(), ".silt/shards/", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			before = append(before, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a.writeMark(map[string]string{"data/m/one/state/latest": "changed"})
	a.push()
	putRaw(t, bk.store, "data/orphan/raw", "never committed")
	return bk, a, before
}

func TestGC_UnreferencedShardAndData_RemovedOnceOld(t *testing.T) {
	bk, _, oldShards := orphanedBucket(t)
	rep, err := syncer.GC(context.Background(), bk.store, syncer.GCOptions{OlderThan: time.Hour, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards) == 0 {
		t.Fatalf("no shard removed; report %+v", rep)
	}
	for _, k := range gcKeys(rep.Shards) {
		if !slices.Contains(oldShards, k) {
			t.Errorf("removed shard %s, which the first commit did not write", k)
		}
		if exists(t, bk.store, k) {
			t.Errorf("shard %s still exists", k)
		}
	}
	mustEqual(t, "data removed", len(rep.Data), 1)
	if len(rep.Data) == 1 {
		mustEqual(t, "data key", rep.Data[0].Key, "data/orphan/raw")
	}
	if exists(t, bk.store, "data/orphan/raw") {
		t.Error("orphan data still exists")
	}
	// Everything committed is intact: a fresh machine pulls it all (and
	// the cleanup's remote check verifies the index).
	b := bk.host()
	st := b.pull()
	mustEqual(t, "downloaded", st.Files.Downloaded, 3)
	if got, _ := b.read("data/m/one/state/latest"); got != "changed" {
		t.Errorf("latest = %q after gc, want %q", got, "changed")
	}
}

func TestGC_RecentGarbage_Kept(t *testing.T) {
	bk, _, _ := orphanedBucket(t)
	rep, err := syncer.GC(context.Background(), bk.store, syncer.GCOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards)+len(rep.Data) != 0 {
		t.Errorf("removed %v %v, want nothing younger than an hour", gcKeys(rep.Shards), gcKeys(rep.Data))
	}
	if rep.Recent < 2 {
		t.Errorf("Recent = %d, want the orphan shard and data counted", rep.Recent)
	}
	if !exists(t, bk.store, "data/orphan/raw") {
		t.Error("recent orphan removed")
	}
}

func TestGC_DryRun_RemovesNothing(t *testing.T) {
	bk, _, _ := orphanedBucket(t)
	rep, err := syncer.GC(context.Background(), bk.store, syncer.GCOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Data) != 1 || len(rep.Shards) == 0 {
		t.Fatalf("dry run report %+v, want the orphans listed", rep)
	}
	for _, k := range append(gcKeys(rep.Shards), gcKeys(rep.Data)...) {
		if !exists(t, bk.store, k) {
			t.Errorf("dry run removed %s", k)
		}
	}
}

func TestGC_ManifestControlLocksAndNamespaces_NeverRemoved(t *testing.T) {
	bk := newBucket(t)
	a := bk.host()
	a.writeMark(map[string]string{"data/x/raw": "x"})
	a.push()
	ns := bk.host(func(c *syncer.Config) { c.Namespace = "team" })
	ns.writeMark(map[string]string{"data/y/raw": "y"})
	ns.push()
	t.Cleanup(func() { checkRemote(t, bk.store, "team") })
	keep := []string{".silt/control/record", ".silt/locks/global", ".silt/locks/global.fence", "team/uncommitted"}
	for _, k := range keep {
		putRaw(t, bk.store, k, "keep me")
	}
	putRaw(t, bk.store, "orphan", "garbage")

	rep, err := syncer.GC(context.Background(), bk.store, syncer.GCOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := gcKeys(rep.Data); !slices.Equal(got, []string{"orphan"}) {
		t.Errorf("removed data %v, want only [orphan]", got)
	}
	mustEqual(t, "shards removed", len(rep.Shards), 0)
	if !slices.Equal(rep.Namespaces, []string{"team"}) {
		t.Errorf("Namespaces = %v, want [team]", rep.Namespaces)
	}
	for _, k := range append(keep, ".silt/manifest.json", "team/.silt/manifest.json", "data/x/raw", "team/data/y/raw") {
		if !exists(t, bk.store, k) {
			t.Errorf("gc removed %s", k)
		}
	}

	// Inside the namespace, its own orphan goes and its index stays.
	nsRoot := backend.Prefixed(bk.store, "team")
	rep, err = syncer.GC(context.Background(), nsRoot, syncer.GCOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := gcKeys(rep.Data); !slices.Equal(got, []string{"uncommitted"}) {
		t.Errorf("namespace gc removed %v, want [uncommitted]", got)
	}
	if !exists(t, bk.store, "team/data/y/raw") {
		t.Error("namespace gc removed committed data")
	}
}

func TestGC_EmptyBucket_ReportsNothing(t *testing.T) {
	bk := newBucket(t)
	rep, err := syncer.GC(context.Background(), bk.store, syncer.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards)+len(rep.Data)+rep.Recent != 0 || rep.Seq != 0 {
		t.Errorf("report %+v, want empty", rep)
	}
}
