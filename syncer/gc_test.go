package syncer_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

// gcMachine is one cache directory bound to the test's bucket, driven
// through the public API only.
type gcMachine struct {
	t   *testing.T
	dir string
	ns  string
	s   *syncer.Syncer
}

// gcBucket is a fresh in-memory bucket whose committed index (root and
// the namespaces listed) is checked when the test ends.
func gcBucket(t *testing.T, namespaces ...string) backend.Backend {
	t.Helper()
	b := mem.New()
	t.Cleanup(func() {
		for _, ns := range append([]string{""}, namespaces...) {
			var root backend.Backend = b
			if ns != "" {
				root = backend.Prefixed(b, ns)
			}
			snap, err := syncer.OpenSnapshot(context.Background(), root)
			if err == nil {
				err = snap.Check(context.Background(), true)
			}
			if err != nil {
				t.Errorf("remote check of namespace %q: %v", ns, err)
			}
		}
	})
	return b
}

func gcOpen(t *testing.T, b backend.Backend, cfg syncer.Config) *gcMachine {
	t.Helper()
	cfg.Backend, cfg.Dir = b, t.TempDir()
	s, err := syncer.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &gcMachine{t: t, dir: cfg.Dir, ns: cfg.Namespace, s: s}
}

func (m *gcMachine) abs(p string) string {
	return filepath.Join(m.dir, m.ns, filepath.FromSlash(p))
}

// writeMark writes files and marks each dirty.
func (m *gcMachine) writeMark(files map[string]string) {
	m.t.Helper()
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(m.abs(p)), 0o755); err != nil {
			m.t.Fatal(err)
		}
		if err := os.WriteFile(m.abs(p), []byte(body), 0o644); err != nil {
			m.t.Fatal(err)
		}
		if err := m.s.MarkDirty(p); err != nil {
			m.t.Fatal(err)
		}
	}
}

func (m *gcMachine) push() {
	m.t.Helper()
	if _, err := m.s.Push(context.Background(), syncer.PushOptions{}); err != nil {
		m.t.Fatalf("push: %v", err)
	}
}

func (m *gcMachine) pull() syncer.Stats {
	m.t.Helper()
	st, err := m.s.Pull(context.Background(), syncer.PullOptions{})
	if err != nil {
		m.t.Fatalf("pull: %v", err)
	}
	return st
}

func (m *gcMachine) read(p string) string {
	data, _ := os.ReadFile(m.abs(p))
	return string(data)
}

func mustBe[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

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
func orphanedBucket(t *testing.T) (backend.Backend, []string) {
	t.Helper()
	store := gcBucket(t)
	a := gcOpen(t, store, syncer.Config{ShardMaxEntries: 4})
	a.writeMark(map[string]string{
		"data/m/one/state/1/raw": "v1", "data/m/one/state/2/raw": "v2", "data/m/one/state/latest": "2",
	})
	a.push()
	var before []string
	err := store.List(context.Background(), ".silt/shards/", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
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
	putRaw(t, store, "data/orphan/raw", "never committed")
	return store, before
}

func TestGC_UnreferencedShardAndData_RemovedOnceOld(t *testing.T) {
	store, oldShards := orphanedBucket(t)
	rep, err := syncer.GC(context.Background(), store, syncer.GCOptions{OlderThan: time.Hour, Now: later})
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
		if exists(t, store, k) {
			t.Errorf("shard %s still exists", k)
		}
	}
	mustBe(t, "data removed", len(rep.Data), 1)
	if len(rep.Data) == 1 {
		mustBe(t, "data key", rep.Data[0].Key, "data/orphan/raw")
	}
	if exists(t, store, "data/orphan/raw") {
		t.Error("orphan data still exists")
	}
	// Everything committed is intact: a fresh machine pulls it all (and
	// the cleanup's remote check verifies the index).
	b := gcOpen(t, store, syncer.Config{})
	st := b.pull()
	mustBe(t, "downloaded", st.Files.Downloaded, 3)
	if got := b.read("data/m/one/state/latest"); got != "changed" {
		t.Errorf("latest = %q after gc, want %q", got, "changed")
	}
}

func TestGC_RecentGarbage_Kept(t *testing.T) {
	store, _ := orphanedBucket(t)
	rep, err := syncer.GC(context.Background(), store, syncer.GCOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards)+len(rep.Data) != 0 {
		t.Errorf("removed %v %v, want nothing younger than an hour", gcKeys(rep.Shards), gcKeys(rep.Data))
	}
	if rep.Recent < 2 {
		t.Errorf("Recent = %d, want the orphan shard and data counted", rep.Recent)
	}
	if !exists(t, store, "data/orphan/raw") {
		t.Error("recent orphan removed")
	}
}

func TestGC_DryRun_RemovesNothing(t *testing.T) {
	store, _ := orphanedBucket(t)
	rep, err := syncer.GC(context.Background(), store, syncer.GCOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Data) != 1 || len(rep.Shards) == 0 {
		t.Fatalf("dry run report %+v, want the orphans listed", rep)
	}
	for _, k := range append(gcKeys(rep.Shards), gcKeys(rep.Data)...) {
		if !exists(t, store, k) {
			t.Errorf("dry run removed %s", k)
		}
	}
}

func TestGC_ManifestControlLocksAndNamespaces_NeverRemoved(t *testing.T) {
	store := gcBucket(t, "team")
	a := gcOpen(t, store, syncer.Config{})
	a.writeMark(map[string]string{"data/x/raw": "x"})
	a.push()
	ns := gcOpen(t, store, syncer.Config{Namespace: "team"})
	ns.writeMark(map[string]string{"data/y/raw": "y"})
	ns.push()
	keep := []string{".silt/control/record", ".silt/locks/global", ".silt/locks/global.fence", "team/uncommitted"}
	for _, k := range keep {
		putRaw(t, store, k, "keep me")
	}
	putRaw(t, store, "orphan", "garbage")

	rep, err := syncer.GC(context.Background(), store, syncer.GCOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := gcKeys(rep.Data); !slices.Equal(got, []string{"orphan"}) {
		t.Errorf("removed data %v, want only [orphan]", got)
	}
	mustBe(t, "shards removed", len(rep.Shards), 0)
	if !slices.Equal(rep.Namespaces, []string{"team"}) {
		t.Errorf("Namespaces = %v, want [team]", rep.Namespaces)
	}
	for _, k := range append(keep, ".silt/manifest.json", "team/.silt/manifest.json", "data/x/raw", "team/data/y/raw") {
		if !exists(t, store, k) {
			t.Errorf("gc removed %s", k)
		}
	}

	// Inside the namespace, its own orphan goes and its index stays.
	nsRoot := backend.Prefixed(store, "team")
	rep, err = syncer.GC(context.Background(), nsRoot, syncer.GCOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := gcKeys(rep.Data); !slices.Equal(got, []string{"uncommitted"}) {
		t.Errorf("namespace gc removed %v, want [uncommitted]", got)
	}
	if !exists(t, store, "team/data/y/raw") {
		t.Error("namespace gc removed committed data")
	}
}

func TestGC_EmptyBucket_ReportsNothing(t *testing.T) {
	store := gcBucket(t)
	rep, err := syncer.GC(context.Background(), store, syncer.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards)+len(rep.Data)+rep.Recent != 0 || rep.Seq != 0 {
		t.Errorf("report %+v, want empty", rep)
	}
}
