package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/blob"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/conformance"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/syncer"
)

// A store with neither compare-and-swap nor atomic create (a gocloud
// bucket without either) refuses a commit unless a distributed lock
// serialises commits; with one, concurrent writers lose nothing, the
// bucket is in the one format this silt writes, every commit records the
// lock's fencing token, and a holder whose token is stale is refused.
func TestSyncer_CommitUnderLock_StoreWithoutConditionalWrite(t *testing.T) {
	bkt := memblob.OpenBucket(nil)
	t.Cleanup(func() { bkt.Close() })
	store := blob.New(bkt, blob.Config{ListAfterWrite: true})
	if caps := store.Capabilities(); caps.ConditionalPut || caps.AtomicCreate {
		t.Fatalf("store capabilities %+v, want neither conditional write", caps)
	}
	locks := mem.New() // the lock lives in a store with compare-and-swap
	ctx := context.Background()

	open := func(l syncer.CommitLocker) *syncer.Syncer { return openLocked(t, store, l) }
	commitLock := func() syncer.CommitLocker {
		l, err := lock.New(locks, ".silt/locks/commit", lock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	bare := open(nil)
	writeOwnName(t, bare, "x/refused")
	if _, err := bare.Push(ctx, syncer.PushOptions{}); !errors.Is(err, syncer.ErrNoConditionalWrite) {
		t.Fatalf("push without a conditional write or a lock: %v, want ErrNoConditionalWrite", err)
	}

	const writers = 6
	pushConcurrently(t, writers, func() *syncer.Syncer { return open(commitLock()) })
	h, err := index.ReadHead(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := h.Manifest
	if m.Format != index.DefaultFormat {
		t.Errorf("format %d under the lock, want %d", m.Format, index.DefaultFormat)
	}
	if n := m.Entries(); n != writers*3 {
		t.Errorf("entries = %d, want %d", n, writers*3)
	}
	if seq, fence := m.Seq, m.Fences[".silt/locks/commit"]; seq != writers*3 || fence != writers*3 {
		t.Errorf("seq %d, fence %d; want %d each", seq, fence, writers*3)
	}
	conformance.CheckRemote(t, store, "")

	stale := open(staleLock{key: ".silt/locks/commit", token: 1})
	writeOwnName(t, stale, "x/stale")
	if _, err := stale.Push(ctx, syncer.PushOptions{}); !errors.Is(err, syncer.ErrFenced) {
		t.Fatalf("push under a stale fencing token: %v, want ErrFenced", err)
	}
	after, err := index.ReadHead(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if after.Manifest.Seq != m.Seq {
		t.Errorf("head seq %d after the fenced push, want %d", after.Manifest.Seq, m.Seq)
	}
}

// staleLock is a commit lock whose holder lost it long ago: it grants at
// once, with the token it was given then.
type staleLock struct {
	key   string
	token uint64
}

func (l staleLock) LockCommit(context.Context) (string, uint64, func(), error) {
	return l.key, l.token, func() {}, nil
}

// Two writers can both upload the same path outside the commit (on a store
// without compare-and-swap, outside the lock); the second commit must then
// fail clearly, not record a version the store no longer holds. An atomic
// create store commits by the log alone, one with neither under the lock.
func TestSyncer_CommitPush_StaleManifest_ReportsConflict(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  blob.Config
		lock bool
	}{
		{"atomic-create", blob.Config{AtomicCreate: true, ListAfterWrite: true}, false},
		{"under-lock", blob.Config{ListAfterWrite: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testStaleManifestConflict(t, tc.cfg, tc.lock) })
	}
}

func testStaleManifestConflict(t *testing.T, bcfg blob.Config, withLock bool) {
	bkt := memblob.OpenBucket(nil)
	t.Cleanup(func() { bkt.Close() })
	store := blob.New(bkt, bcfg)
	locks := mem.New()
	ctx := context.Background()
	open := func() *syncer.Syncer {
		cfg := syncer.Config{Backend: store, Dir: t.TempDir()}
		if withLock {
			l, err := lock.New(locks, ".silt/locks/commit", lock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg.CommitLock = l
		}
		s, err := syncer.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	write := func(s *syncer.Syncer, content string) {
		if err := os.WriteFile(filepath.Join(s.Root(), "p"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDirty("p"); err != nil {
			t.Fatal(err)
		}
	}
	a, b := open(), open()
	write(a, "a1")
	if _, err := a.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	write(a, "a2")
	pa, _, err := a.PreparePush(ctx, syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write(b, "b2")
	pb, _, err := b.PreparePush(ctx, syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CommitPush(ctx, pa, nil); err != nil {
		t.Fatal(err)
	}
	st, err := b.CommitPush(ctx, pb, nil)
	if err != nil || st.Files.Conflicts != 1 || st.Conflicts[0].Path != "p" {
		t.Errorf("second commit: %+v, %v, want a conflict on p", st.Conflicts, err)
	}
}

// The default format commits by create-if-absent of a log entry, which a
// store with atomic create but no compare-and-swap (Azure Blob, gocloud's
// mem) settles without any lock: concurrent writers with no commit lock
// lose nothing, and the bucket is in the default format. A store with
// neither is still refused without a commit lock.
func TestSyncer_DefaultFormat_AtomicCreateStore_CommitsWithoutLock(t *testing.T) {
	bkt := memblob.OpenBucket(nil)
	t.Cleanup(func() { bkt.Close() })
	store := blob.New(bkt, blob.Config{AtomicCreate: true, ListAfterWrite: true})
	ctx := context.Background()
	open := func(b backend.Backend) *syncer.Syncer {
		s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	write := func(s *syncer.Syncer, p string) { writeOwnName(t, s, p) }
	const writers = 6
	pushConcurrently(t, writers, func() *syncer.Syncer { return open(store) })
	h, err := index.ReadHead(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Manifest.Format != index.DefaultFormat || h.Manifest.Entries() != writers*3 {
		t.Errorf("format %d with %d entries; want format %d with %d", h.Manifest.Format, h.Manifest.Entries(), index.DefaultFormat, writers*3)
	}
	reader := open(store)
	if _, err := reader.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		for r := range 3 {
			p := fmt.Sprintf("data/w%d/r%d", w, r)
			if got, err := os.ReadFile(filepath.Join(reader.Root(), p)); err != nil || string(got) != p {
				t.Errorf("%s after a pull: %q, %v", p, got, err)
			}
		}
	}
	conformance.CheckRemote(t, store, "")

	nbkt := memblob.OpenBucket(nil)
	t.Cleanup(func() { nbkt.Close() })
	bare := open(blob.New(nbkt, blob.Config{ListAfterWrite: true}))
	write(bare, "x/refused")
	if _, err := bare.Push(ctx, syncer.PushOptions{}); !errors.Is(err, syncer.ErrNoConditionalWrite) {
		t.Fatalf("push to a store with neither conditional put nor atomic create: %v, want ErrNoConditionalWrite", err)
	}
}

// writeOwnName writes p, holding its own name, in s's cache and marks it.
func writeOwnName(t *testing.T, s *syncer.Syncer, p string) {
	t.Helper()
	abs := filepath.Join(s.Root(), p)
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDirty(p); err != nil {
		t.Fatal(err)
	}
}

// pushConcurrently has writers caches from open each write and push three
// files of their own, all at once.
func pushConcurrently(t *testing.T, writers int, open func() *syncer.Syncer) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range writers {
		s := open()
		wg.Go(func() {
			for r := range 3 {
				writeOwnName(t, s, fmt.Sprintf("data/w%d/r%d", w, r))
				if _, err := s.Push(t.Context(), syncer.PushOptions{}); err != nil {
					t.Errorf("writer %d: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
}

// A bucket an older silt wrote in format 3 on a store with neither
// conditional write (its commits serialised by the lock) is migrated
// under the same lock, as a commit is: without one the migration is
// refused before it writes anything; with one every file is carried
// over and the next push commits in the log.
func TestSyncer_MigrateUnderLock_StoreWithoutConditionalWrite(t *testing.T) {
	bkt := memblob.OpenBucket(nil)
	t.Cleanup(func() { bkt.Close() })
	store := blob.New(bkt, blob.Config{ListAfterWrite: true})
	ctx := context.Background()
	for i := range 3 {
		if _, err := legacy.Push(ctx, backend.UnderLock(store), 3, map[string][]byte{fmt.Sprintf("old/%d", i): []byte(fmt.Sprint("older silt ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := index.ReadHead(ctx, store, nil)
	if err != nil || before.Manifest.Format != 3 {
		t.Fatalf("head %+v, %v; want format 3", before.Manifest, err)
	}
	open := func(l syncer.CommitLocker) *syncer.Syncer { return openLocked(t, store, l) }
	if _, err := open(nil).Migrate(ctx, index.MigrateOptions{}); !errors.Is(err, syncer.ErrNoConditionalWrite) {
		t.Fatalf("migrate with no lock: %v, want ErrNoConditionalWrite", err)
	}
	if h, err := index.ReadHead(ctx, store, nil); err != nil || h.Manifest.Format != 3 || h.Version != before.Version {
		t.Fatalf("the refused migration changed the head: %+v, %v", h.Manifest, err)
	}
	if rep, err := open(nil).Migrate(ctx, index.MigrateOptions{DryRun: true}); err != nil || rep.To != index.DefaultFormat || len(rep.Writes) == 0 {
		t.Fatalf("dry run with no lock: %+v, %v; want what it would write", rep, err)
	}
	l, err := lock.New(mem.New(), ".silt/locks/commit", lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := open(l)
	rep, err := s.Migrate(ctx, index.MigrateOptions{})
	if err != nil || rep.From != 3 || rep.To != index.DefaultFormat || rep.Entries != 3 {
		t.Fatalf("migrate under the lock: %+v, %v", rep, err)
	}
	writeOwnName(t, s, "new/after")
	if _, err := s.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Fatalf("push after the migration: %v", err)
	}
	dir := t.TempDir()
	reader, err := syncer.Open(ctx, syncer.Config{Backend: store, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"old/0", "old/1", "old/2", "new/after"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s after the migration: %v", p, err)
		}
	}
	conformance.CheckRemote(t, store, "")
}

// openLocked opens a cache of store in a fresh directory, committing
// under l (nil: no lock).
func openLocked(t *testing.T, store backend.Backend, l syncer.CommitLocker) *syncer.Syncer {
	t.Helper()
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir(), CommitLock: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
