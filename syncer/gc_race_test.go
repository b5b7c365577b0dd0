package syncer_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// pauseDelete holds the first Delete that reaches it until released: a GC
// that has listed, marked and decided, paused just before its sweep.
type pauseDelete struct {
	backend.Backend
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func newPauseDelete(b backend.Backend) *pauseDelete {
	return &pauseDelete{Backend: b, reached: make(chan struct{}), release: make(chan struct{})}
}

func (p *pauseDelete) Delete(ctx context.Context, key string, cond backend.Cond) error {
	p.once.Do(func() {
		close(p.reached)
		<-p.release
	})
	return p.Backend.Delete(ctx, key, cond)
}

func removeAndPush(t *testing.T, c *syncer.Syncer, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Remove(filepath.Join(c.Root(), filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// clockedStore is a store on a clock of its own: gc ages log entries and
// checkpoints by the store's clock, which a test moves past the grace.
func clockedStore() (backend.Backend, *wrap.Clock) {
	clock := wrap.NewClock(time.Now())
	return wrap.Clocked(mem.New(), clock), clock
}

// checkpointingCache opens a cache on b that writes a checkpoint at every
// seq. Entries leave the log only as the prefix up to an old checkpoint
// below the head, so with it a state is collectable once one more commit
// is above it.
func checkpointingCache(t *testing.T, b backend.Backend) *syncer.Syncer {
	t.Helper()
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: t.TempDir(), CheckpointEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// gcDuringPush moves clock past the grace period of everything store holds,
// runs a GC, pauses it after its decision, runs push, then lets it sweep;
// and checks every entry of the snapshot the push committed.
func gcDuringPush(t *testing.T, store backend.Backend, clock *wrap.Clock, push func()) index.GCReport {
	t.Helper()
	ctx := context.Background()
	p := newPauseDelete(store)
	clock.Advance(3 * time.Hour)
	var rep index.GCReport
	var gcErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, gcErr = index.GC(ctx, p, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: clock.Now})
	}()
	select {
	case <-p.reached:
	case <-done:
		t.Fatalf("gc deleted nothing: %+v %v", rep, gcErr)
	}
	push()
	close(p.release)
	<-done
	if gcErr != nil {
		t.Fatal(gcErr)
	}
	snap, err := index.OpenSnapshot(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Check(ctx, true); err != nil {
		t.Errorf("the snapshot the push committed during gc: %v", err)
	}
	return rep
}

// Issue 18: a push that re-adds content whose object is unreferenced and
// past the grace period found it with Put(IfAbsent), counted it
// deduplicated and committed an entry naming it, while a GC that had
// listed before deleted it.
func TestGC_Regression_ConcurrentDedupPushObject(t *testing.T) {
	store, clock := clockedStore()
	w := checkpointingCache(t, store)
	pushFiles(t, w, map[string]string{"data/m/model.bin": "weights of last week"})
	removeAndPush(t, w, "data/m/model.bin")
	pushFiles(t, w, map[string]string{"data/m/notes": "a commit above the removal"})
	rep := gcDuringPush(t, store, clock, func() {
		pushFiles(t, w, map[string]string{"data/m/restored.bin": "weights of last week"})
	})
	if len(rep.Data) != 1 {
		t.Fatalf("gc swept objects %v, want the removed model's", rep.Data)
	}
	r := openCache(t, store)
	if _, err := r.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatalf("fresh pull after gc: %v", err)
	}
	if got := readFile(t, r, "data/m/restored.bin"); got != "weights of last week" {
		t.Fatalf("restored file reads %q", got)
	}
}

// The same with a pack: a restored directory of small files re-creates
// the very same pack.
func TestGC_Regression_ConcurrentDedupPushPack(t *testing.T) {
	store, clock := clockedStore()
	w := checkpointingCache(t, store)
	files := packFiles(6)
	pushFiles(t, w, files)
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	removeAndPush(t, w, paths...)
	pushFiles(t, w, map[string]string{"data/n/notes": "a commit above the removal"})
	rep := gcDuringPush(t, store, clock, func() { pushFiles(t, w, files) })
	if len(rep.Packs) != 1 {
		t.Fatalf("gc swept packs %v, want the old one", rep.Packs)
	}
	r := openCache(t, store)
	if _, err := r.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatalf("fresh pull after gc: %v", err)
	}
	for p, c := range files {
		if got := readFile(t, r, p); got != c {
			t.Fatalf("%s reads %q", p, got)
		}
	}
}

// A deduplication against an object the base still names (a rename)
// uploads nothing: the commit checks the base still names it.
func TestSyncer_Push_RenameDedupProvenByBase_NoUpload(t *testing.T) {
	store := mem.New()
	w := openCache(t, store)
	pushFiles(t, w, map[string]string{"data/m/a.bin": "same bytes"})
	if err := os.Rename(filepath.Join(w.Root(), "data/m/a.bin"), filepath.Join(w.Root(), "data/m/b.bin")); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	st, err := w.Push(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files.Deduplicated != 1 || st.Bytes.Up != 0 || st.Files.Deleted != 1 {
		t.Fatalf("rename push: %+v, %d bytes up; want one deduplicated, nothing sent", st.Files, st.Bytes.Up)
	}
}

// Issue 18: GC swept data before the history copies naming it, so a GC
// killed between its sweeps left `silt log` listing snapshots that could
// no longer be read. In the log the same holds of the entries and
// checkpoints below the cut.
func TestGC_Regression_KilledBetweenSweepsLogListsOnlyReadable(t *testing.T) {
	ctx := context.Background()
	store, clock := clockedStore()
	w := checkpointingCache(t, store)
	for _, content := range []string{"one", "two", "three", "four"} {
		pushFiles(t, w, map[string]string{"data/m/latest": content})
	}
	clock.Advance(3 * time.Hour)
	f := wrap.Faults(store)
	f.Add(wrap.Rule{Verb: wrap.VerbDelete, KeyPrefix: index.ObjectsPrefix, Nth: 1})
	if _, err := index.GC(ctx, f, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: clock.Now}); err == nil {
		t.Fatal("gc with a failing delete succeeded")
	}
	log, err := index.Log(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		snap, err := index.OpenSnapshotAt(ctx, store, e.Seq)
		if err != nil {
			t.Errorf("log lists seq %d: %v", e.Seq, err)
			continue
		}
		if _, err := snap.Check(ctx, true); err != nil {
			t.Errorf("log lists seq %d, unreadable: %v", e.Seq, err)
		}
	}
}

// Found by the model's gc actor: a commit re-creating the bytes of a shard
// a failed attempt left behind (the same push retried hours later) found
// it with create-if-absent and committed a manifest naming it, while a GC
// that had listed it as old garbage deleted it.
func TestGC_Regression_RetriedPushRecreatesOldShard(t *testing.T) {
	store, clock := clockedStore()
	f := wrap.Faults(store)
	w, err := syncer.Open(t.Context(), syncer.Config{Backend: f, Dir: t.TempDir(), CommitAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	pushFiles(t, w, map[string]string{"data/m/a": "a", "data/m/b": "b"})
	if err := os.Remove(filepath.Join(w.Root(), "data/m/b")); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	f.Add(wrap.Rule{Verb: wrap.VerbCondPut, KeyPrefix: index.LogPrefix, Times: 100})
	if _, err := w.Push(t.Context(), syncer.PushOptions{}); err == nil {
		t.Fatal("push through a failing log entry create succeeded")
	}
	f.Reset()
	gcDuringPush(t, store, clock, func() {
		if _, err := w.Push(t.Context(), syncer.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
