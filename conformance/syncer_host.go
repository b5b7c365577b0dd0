package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/control"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/namespace"
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/verify"
)

func checkSyncerTwoPhasePush_PrepareThenCommit(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	a.writeMark(map[string]string{"data/t/m/1": "one"})
	a.push()
	b.pull()

	a.writeMark(map[string]string{"data/t/m/2": "two", "data/t/m/1": "one v2"})
	ctx := context.Background()
	pm, st, err := a.s.PreparePush(ctx, syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "prepared uploads", st.Files.Uploaded, 2)
	mustEqual(t, "prepared files", pm.Files(), 2)
	if snap, _ := index.OpenSnapshot(ctx, bk.store); snap.Manifest().Seq != 1 {
		t.Errorf("prepare moved the index to seq %d", snap.Manifest().Seq)
	}
	if s, _ := a.s.Status(ctx, false); len(s.Dirty) != 2 {
		t.Errorf("prepare cleared dirty marks: %v", s.Dirty)
	}
	// A peer commits in between; the commit merges, never replaces.
	b.writeMark(map[string]string{"data/t/peer": "p"})
	b.push()

	// The manifest survives a trip through JSON and a new process.
	data, err := json.Marshal(pm)
	if err != nil {
		t.Fatal(err)
	}
	a.restart()
	var back syncer.PushManifest
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	st, err = a.s.CommitPush(ctx, &back, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "commit seq", st.Seq, uint64(3))
	if s, _ := a.s.Status(ctx, false); len(s.Dirty) != 0 {
		t.Errorf("commit left dirty marks: %v", s.Dirty)
	}

	// Committing the same manifest again writes nothing.
	c := a.counted()
	if _, err := a.s.CommitPush(ctx, &back, nil); err != nil {
		t.Fatal(err)
	}
	if w := c.Counts().Put + c.Counts().CondPut + c.Counts().Delete; w != 0 {
		t.Errorf("repeated commit wrote %d objects", w)
	}
	b.pull()
	for p, want := range map[string]string{"data/t/m/1": "one v2", "data/t/m/2": "two", "data/t/peer": "p"} {
		if got, _ := b.read(p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

func checkSyncerPreviewPush_CountsWithoutRequests(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	a.writeMark(map[string]string{"a/1": "1", "a/2": "2"})
	a.push()
	a.writeMark(map[string]string{"a/1": "changed", "a/3": "new"})
	a.remove("a/2")
	a.mark("a/2")
	c := a.counted()
	p, err := a.s.PreviewPush(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p != (syncer.Preview{New: 1, Changed: 1, Deleted: 1, Total: 3}) {
		t.Errorf("preview = %+v", p)
	}
	mustEqual(t, "requests", c.Counts().Total(), int64(0))
	mustEqual(t, "still pushes", a.push().Files.Uploaded, 2)
}

// Reference scenario S17: a metadata-only pull records large files without
// fetching them; their absence is never a deletion; HydrateFile and a later
// full pull fetch them.
func checkSyncerMetadataOnly_LazyThenHydrate(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	w := bk.host()
	w.writeMark(map[string]string{
		"data/t/x/state/1/raw": "x raw", "data/t/x/state/1/metadata.yaml": "x meta",
		"data/t/y/state/1/raw": "y raw", "models/t/x.yaml": "def",
	})
	w.push()

	h := bk.host()
	ctx := context.Background()
	st, err := h.s.Pull(ctx, syncer.PullOptions{MetadataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "lazy downloaded", st.Files.Downloaded, 2)
	if _, ok := h.read("data/t/x/state/1/raw"); ok {
		t.Error("a metadata-only pull downloaded a raw file")
	}
	if err := h.s.MarkAllDirty(); err != nil {
		t.Fatal(err)
	}
	h.mark("data/t/x")
	mustEqual(t, "deleted while lazy", h.push().Files.Deleted, 0)

	ok, _, err := h.s.HydrateFile(ctx, "data/t/x/state/1/raw")
	if err != nil || !ok {
		t.Fatalf("hydrate: %v, %v", ok, err)
	}
	if got, _ := h.read("data/t/x/state/1/raw"); got != "x raw" {
		t.Errorf("hydrated content %q", got)
	}
	if ok, _, err := h.s.HydrateFile(ctx, "data/t/none/raw"); ok || err != nil {
		t.Errorf("hydrate of a missing path: %v, %v", ok, err)
	}
	st = h.pull("data/t/x") // a scoped pull leaves the rest lazy
	if _, ok := h.read("data/t/y/state/1/raw"); ok {
		t.Error("a scoped pull hydrated outside its scope")
	}
	st = h.pull()
	mustEqual(t, "full pull hydrates the rest", st.Files.Downloaded, 1)
	if got, _ := h.read("data/t/y/state/1/raw"); got != "y raw" {
		t.Errorf("y raw = %q", got)
	}
	mustEqual(t, "temp files left", len(tempDownloads(t, h.dir)), 0)
}

// Reference scenario S35: namespaces in one bucket are independent, and a
// push never touches keys outside its namespace.
func checkSyncerNamespaces_AreIndependent(t *testing.T, nb Factory) {
	store := wrap.Count(nb(t))
	bk := &bucket{t: t, store: store}
	ns := func(name, owner string) func(*syncer.Config) {
		return func(c *syncer.Config) { c.Namespace, c.Owner = name, owner }
	}
	a := bk.host(ns("team-a", "repo-1"))
	b := bk.host(ns("team-b", "repo-2"))
	a.writeMark(map[string]string{"data/t/m/1": "a"})
	b.writeMark(map[string]string{"data/t/m/1": "b"})
	store.Reset()
	a.push()
	for _, r := range store.Log() {
		if !strings.HasPrefix(r.Key, "team-a/") {
			t.Errorf("team-a push touched %s %s", r.Verb, r.Key)
		}
	}
	b.push()
	a2 := bk.host(ns("team-a", "repo-1"))
	a2.pull()
	if got, _ := a2.read("data/t/m/1"); got != "a" {
		t.Errorf("team-a sees %q", got)
	}
	if _, err := os.Stat(filepath.Join(a2.dir, "team-a", "data/t/m/1")); err != nil {
		t.Errorf("namespaced file not under DIR/team-a: %v", err)
	}
	list, err := namespace.List(context.Background(), store)
	if err != nil || len(list) != 2 || list[0].Namespace != "team-a" || list[1].Owner != "repo-2" {
		t.Errorf("Namespaces = %+v, %v", list, err)
	}
	_, err = syncer.Open(context.Background(), syncer.Config{Backend: store, Dir: t.TempDir(), Namespace: "team-a", Owner: "repo-9"})
	if !errors.Is(err, namespace.ErrTaken) {
		t.Errorf("open by another owner: %v, want ErrNamespaceTaken", err)
	}
	CheckRemote(t, store, "team-a")
	CheckRemote(t, store, "team-b")
}

func checkControlRecordsBypassTheIndex(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	ctx := context.Background()
	c := control.New(bk.store) // the namespace root: this bucket has no namespace
	if _, err := c.Get(ctx, "runs/1"); !backend.IsNotExist(err) {
		t.Errorf("get missing: %v", err)
	}
	if ok, err := c.PutIfAbsent(ctx, "runs/1", []byte("claim")); !ok || err != nil {
		t.Fatalf("put-if-absent: %v %v", ok, err)
	}
	if ok, _ := c.PutIfAbsent(ctx, "runs/1", []byte("other")); ok {
		t.Error("second put-if-absent won")
	}
	c.Put(ctx, "runs/2", []byte("x"))
	keys, err := c.List(ctx, "runs/")
	if err != nil || strings.Join(keys, ",") != "runs/1,runs/2" {
		t.Errorf("list = %v, %v", keys, err)
	}
	if got, _ := c.Get(ctx, "runs/1"); string(got) != "claim" {
		t.Errorf("get = %q", got)
	}
	c.Delete(ctx, "runs/2")
	if _, err := c.Get(ctx, "../x"); !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("bad key: %v", err)
	}
	other := bk.host()
	mustEqual(t, "pulled", other.pull().Files.Downloaded, 0)
}

func checkVerifyHealthyStore(t *testing.T, nb Factory) {
	r, err := verify.Run(context.Background(), nb(t))
	if err != nil || !r.Healthy {
		t.Errorf("verify: %+v, %v", r, err)
	}
	store := nb(t)
	if store.Capabilities().ConditionalPut && r.Race.Got != verify.Racers*verify.Increments {
		t.Errorf("verify ran no compare-and-swap race: %+v", r.Race)
	}
	if r.CreateRace.Rounds != verify.CreateRounds || !r.CreateRace.OK() {
		t.Errorf("verify ran no create-if-absent race: %+v", r.CreateRace)
	}
}

// Cancellation stops an operation without a torn file or index, and the
// next run converges.
func checkSyncerCancellation_LeavesNothingTorn(t *testing.T, nb Factory) {
	store := nb(t)
	bk := newBucketOn(t, store)
	// One object per file, so the cancel lands between downloads.
	w := bk.host(func(c *syncer.Config) { c.PackThreshold = -1 })
	files := map[string]string{}
	for i := range 30 {
		files[filepath.ToSlash(filepath.Join("d", string(rune('a'+i%26)), strings.Repeat("x", i+1)))] = strings.Repeat("y", 1000+i)
	}
	w.writeMark(files)
	w.push()

	ctx, cancel := context.WithCancel(context.Background())
	f := wrap.Faults(store)
	gets := 0
	f.Add(wrap.Rule{Verb: wrap.VerbGet, KeyPrefix: index.ObjectsPrefix, Match: func(wrap.Verb, string) bool {
		gets++
		if gets == 10 {
			cancel()
		}
		return false
	}})
	h := bk.host(func(c *syncer.Config) { c.Backend = f; c.Concurrency = 1 })
	if _, err := h.s.Pull(ctx, syncer.PullOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pull: %v", err)
	}
	for p, c := range files {
		if got, ok := h.read(p); ok && got != c {
			t.Errorf("torn file %s", p)
		}
	}
	mustEqual(t, "pull after cancel", h.pull().Files.Downloaded, len(files)-9) // nine landed before the cancel

	// A cancelled push leaves the index where it was.
	ctx, cancel = context.WithCancel(context.Background())
	h.writeMark(map[string]string{"d/new1": "n", "d/new2": "m"})
	f.Reset()
	f.Add(wrap.Rule{Match: func(v wrap.Verb, key string) bool {
		if isCommitPoint(v, key) {
			cancel()
		}
		return false
	}})
	if _, err := h.s.Push(ctx, syncer.PushOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled push: %v", err)
	}
	if snap, _ := index.OpenSnapshot(context.Background(), store); snap.Manifest().Seq != 1 {
		t.Errorf("a cancelled push moved the index to %d", snap.Manifest().Seq)
	}
	mustEqual(t, "push after cancel", h.push().Seq, uint64(2))
}
