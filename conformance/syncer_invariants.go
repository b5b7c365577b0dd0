package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// Invariant 1: an index object is verified by the response that delivered
// it; bytes that do not match the index never enter the cache.
func checkInvariant1_FingerprintsComeFromTheDeliveringResponse(t *testing.T, nb Factory) {
	store := nb(t)
	bk := newBucketOn(t, store)
	a := bk.host()
	a.writeMark(map[string]string{"data/t/m/1/raw": "good bytes"})
	a.push()

	f := wrap.Faults(store)
	f.Add(wrap.Rule{Verb: wrap.VerbGet, KeyPrefix: index.ObjectsPrefix, Nth: 1, Mode: wrap.CorruptBody})
	b := bk.host(func(c *syncer.Config) { c.Backend = f })
	_, err := b.s.Pull(context.Background(), syncer.PullOptions{})
	var oe *index.ObjectError
	if !errors.Is(err, index.ErrCorruptObject) || !errors.As(err, &oe) || oe.Path != "data/t/m/1/raw" {
		t.Errorf("pull of corrupted bytes: %v, want ErrCorruptObject naming the path", err)
	}
	if got, ok := b.read("data/t/m/1/raw"); ok {
		t.Fatalf("corrupted download entered the cache: %q", got)
	}
	st := b.pull()
	mustEqual(t, "downloaded on the next pull", st.Files.Downloaded, 1)
	if got, _ := b.read("data/t/m/1/raw"); got != "good bytes" {
		t.Errorf("after retry: %q", got)
	}

	// A shard whose bytes do not hash to its name is refused.
	snap, err := index.OpenSnapshot(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	key := ".silt/shards/" + snap.Manifest().Shards[0].ID + ".json"
	good, _, _ := backend.ReadAll(context.Background(), store, key, backend.GetOptions{}, 0)
	if _, err := backend.PutBytes(context.Background(), store, key, append([]byte(" "), good...), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	c := bk.host()
	_, err = c.s.Pull(context.Background(), syncer.PullOptions{})
	if !errors.Is(err, index.ErrCorruptIndex) {
		t.Errorf("pull of a tampered shard: err = %v, want ErrCorruptIndex", err)
	}
	if _, ok := c.read("data/t/m/1/raw"); ok {
		t.Error("pull of a tampered shard wrote data")
	}
	backend.PutBytes(context.Background(), store, key, good, backend.Cond{}) // let the remote check pass
}

// Invariant 2: only a successful push clears dirty state; a pull never drops
// a pending push.
func checkInvariant2_PullNeverClearsDirty(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	a.writeMark(map[string]string{"data/t/x/1": "one"})
	a.push()
	b.pull()

	a.mark("data/t/x/2")
	a.write("data/t/x/2", "pending")
	b.writeMark(map[string]string{"data/t/y/1": "peer"})
	b.push()
	a.pull()
	a.pull("data/t/x")
	c := a.counted()
	st := a.push()
	mustEqual(t, "uploaded", st.Files.Uploaded, 1)
	if got := dataPuts(c.Log()); !slices.Equal(got, []string{objKey("pending")}) {
		t.Errorf("data puts %v", got)
	}

	// A failed push keeps the mark too.
	a.writeMark(map[string]string{"data/t/x/3": "again"})
	f := wrap.Faults(bk.store)
	f.Add(wrap.Rule{Match: isCommitPoint, Err: errors.New("store down")})
	a.s.Close()
	a.cfg.Backend = f
	a.open()
	if _, err := a.s.Push(context.Background(), syncer.PushOptions{}); err == nil {
		t.Fatal("push through a failing manifest write succeeded")
	}
	a.cfg.Backend = bk.store
	a.restart()
	// The data went up before the failed commit, but no committed entry
	// names it: it may be garbage a gc has already decided to delete, so
	// the retry sends it again under a fresh name (FORMAT.md, "Garbage
	// collection") rather than adopt it.
	mustEqual(t, "uploaded after failure", a.push().Files.Uploaded, 1)
	b.pull()
	if got, _ := b.read("data/t/x/3"); got != "again" {
		t.Errorf("the retried push did not commit: %q", got)
	}
}

// Invariant 3: a remote deletion needs positive evidence; a bare bulk mark
// or a file this cache never had is not evidence.
func checkInvariant3_DeletionsNeedPositiveEvidence(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	a.writeMark(map[string]string{"data/t/m/kept": "1", "data/t/m/gone": "2", "data/t/n/peer": "3"})
	a.push()
	b.pull("data/t/m")

	b.remove("data/t/m/gone")
	if err := b.s.MarkAllDirty(); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "deleted after a bulk mark", b.push().Files.Deleted, 0)
	b.mark("data/t/n") // never pulled: absence is not evidence
	mustEqual(t, "deleted under a dir never pulled", b.push().Files.Deleted, 0)
	b.mark("data/t/m")
	mustEqual(t, "deleted under a marked dir", b.push().Files.Deleted, 1)
	if !bk.committed("data/t/n/peer") {
		t.Error("a file b never had was deleted")
	}

	// Lazily pulled files are known, not held: never deletions.
	c := bk.host()
	if _, err := c.s.Pull(context.Background(), syncer.PullOptions{MetadataOnly: true}); err != nil {
		t.Fatal(err)
	}
	c.mark("data")
	mustEqual(t, "deleted while lazy", c.push().Files.Deleted, 0)
}

// Invariant 4: pull prunes a local file only from a committed removal in a
// shard it read, and only when the copy is unchanged since sync and clean.
func checkInvariant4_PeerDeletionRemovesOnlyUnchangedCopies(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	files := map[string]string{"data/t/m/plain": "1", "data/t/m/edited": "2", "data/t/m/marked": "3", "other/x": "4"}
	a.writeMark(files)
	a.push()
	b := bk.host()
	b.pull()
	b.write("data/t/m/edited", "local edit")
	b.mark("data/t/m/marked")

	for p := range files {
		a.remove(p)
		a.mark(p)
	}
	a.push()

	st := b.pull("data/t/m")
	mustEqual(t, "removed", st.Files.Removed, 1)
	mustEqual(t, "conflicts", st.Files.Conflicts, 2)
	if _, ok := b.read("data/t/m/plain"); ok {
		t.Error("unchanged copy of a peer-deleted file kept")
	}
	if got, _ := b.read("data/t/m/edited"); got != "local edit" {
		t.Errorf("edited copy lost: %q", got)
	}
	if _, ok := b.read("data/t/m/marked"); !ok {
		t.Error("marked copy removed")
	}
	if _, ok := b.read("other/x"); !ok {
		t.Error("a scoped pull pruned outside its scope")
	}
	mustEqual(t, "removed by the unscoped pull", b.pull().Files.Removed, 1)
}

// Invariant 5: index writes merge this writer's changes onto freshly read
// state: eight writers on overlapping shards lose nothing, and every commit
// advances the sequence by exactly one.
func checkInvariant5_ConcurrentWritersLoseNothing(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	const writers, rounds, perRound = 8, 3, 4
	hosts := make([]*host, writers)
	for i := range hosts {
		hosts[i] = bk.host(withShardMax(8))
	}
	var mu sync.Mutex
	var seqs []int
	var wg sync.WaitGroup
	for w, h := range hosts {
		wg.Go(func() {
			for r := range rounds {
				for f := range perRound {
					// Interleaved names: every writer touches every shard.
					p := fmt.Sprintf("data/f%02d-w%d-r%d", f*10+r, w, r)
					h.write(p, p)
					if err := h.s.MarkDirty(p); err != nil {
						t.Error(err)
						return
					}
				}
				st, err := h.s.Push(context.Background(), syncer.PushOptions{})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				mu.Lock()
				seqs = append(seqs, int(st.Seq))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Ints(seqs)
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("commit seqs %v: want 1..%d, each once", seqs, writers*rounds)
		}
	}
	snap, err := index.OpenSnapshot(context.Background(), bk.store)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "entries", snap.Manifest().Entries(), writers*rounds*perRound)
	mustEqual(t, "seq", snap.Manifest().Seq, uint64(writers*rounds))
}

// Invariant 6: a scoped pull never records anything about shards outside
// its scope, so a later full pull still fetches them.
func checkInvariant6_ScopedPullNeverAdvancesOutsideScope(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(withShardMax(4)), bk.host(withShardMax(4))
	for _, m := range []string{"x", "y"} {
		a.writeMark(modelFiles("t", m, 6))
	}
	a.push()
	b.pull()
	a.writeMark(map[string]string{"data/t/x/state/1/raw": "x2", "data/t/y/state/1/raw": "y2"})
	a.push()

	st := b.pull("data/t/x")
	mustEqual(t, "scoped downloaded", st.Files.Downloaded, 1)
	if got, _ := b.read("data/t/y/state/1/raw"); got == "y2" {
		t.Error("scoped pull downloaded outside its scope")
	}
	st = b.pull()
	mustEqual(t, "full downloaded", st.Files.Downloaded, 1)
	if got, _ := b.read("data/t/y/state/1/raw"); got != "y2" {
		t.Errorf("full pull after a scoped one missed y: %q", got)
	}
}

// Invariant 7: every path crossing the boundary is validated.
func checkInvariant7_PathsAreValidated(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", "x/.silt/state.db", ".silt/state.db", "a\x00b"} {
		if err := a.s.MarkDirty(p); !errors.Is(err, index.ErrInvalidPath) {
			t.Errorf("MarkDirty(%q) = %v, want ErrInvalidPath", p, err)
		}
		if _, err := a.s.Pull(context.Background(), syncer.PullOptions{Scope: []string{p}}); !errors.Is(err, index.ErrInvalidPath) {
			t.Errorf("Pull(scope %q) = %v, want ErrInvalidPath", p, err)
		}
	}

	// A symlink out of the cache is neither followed on push nor written
	// through on pull.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	if err := os.Symlink(outside, filepath.Join(a.dir, "link")); err != nil {
		t.Fatal(err)
	}
	a.mark("link/secret")
	if _, err := a.s.Push(context.Background(), syncer.PushOptions{}); !errors.Is(err, index.ErrInvalidPath) {
		t.Errorf("push through a symlinked dir: %v, want ErrInvalidPath", err)
	}
	a.cfg.Dir = a.dir
	a.s.Close()
	os.RemoveAll(filepath.Join(a.dir, ".silt"))
	a.open()
	a.s.MarkAllDirty()
	mustEqual(t, "uploaded through a symlink", a.push().Files.Uploaded, 0)

	w := bk.host()
	w.writeMark(map[string]string{"link/planted": "x"})
	w.push()
	st := a.pull()
	mustEqual(t, "conflicts", st.Files.Conflicts, 1)
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("pull wrote through a symlink out of the cache")
	}
}

// Invariant 8: a crash at any request of a push leaves the remote readable,
// and the next push converges with nothing lost.
func checkInvariant8_FaultAtEveryRequestOfAPushConverges(t *testing.T, nb Factory) {
	setup := func(t *testing.T, store backend.Backend) *host {
		bk := newBucketOn(t, store)
		h := bk.host(withShardMax(4))
		h.writeMark(map[string]string{"d/a": "a1", "d/b": "b1", "d/c": "c1", "e/x": "x1", "e/y": "y1"})
		h.push()
		h.writeMark(map[string]string{"d/a": "a2", "d/new": "n1"})
		h.remove("d/b")
		h.mark("d/b")
		return h
	}
	want := map[string]string{"d/a": "a2", "d/c": "c1", "d/new": "n1", "e/x": "x1", "e/y": "y1"}

	// Learn how many requests the push makes.
	probe := wrap.Count(nb(t))
	ph := setup(t, probe)
	probe.Reset()
	ph.push()
	n := int(probe.Counts().Total())
	if n < 5 {
		t.Fatalf("push made only %d requests", n)
	}
	for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
		for i := 1; i <= n; i++ {
			t.Run(fmt.Sprintf("%v/request%d", mode, i), func(t *testing.T) {
				store := nb(t)
				h := setup(t, store)
				f := wrap.Faults(store)
				f.Add(wrap.Rule{Nth: i, Mode: mode})
				h.s.Close()
				h.cfg.Backend = f
				h.open()
				_, err := h.s.Push(context.Background(), syncer.PushOptions{})
				checkIndex(t, store)
				// A new process on the same directory finishes the job.
				h.cfg.Backend = store
				h.restart()
				if err != nil {
					h.push()
				}
				fresh := h.bk.host()
				fresh.pull()
				for p, c := range want {
					if got, _ := fresh.read(p); got != c {
						t.Errorf("%s = %q, want %q (first push: %v)", p, got, c, err)
					}
				}
				if _, ok := fresh.read("d/b"); ok {
					t.Errorf("d/b survived (first push: %v)", err)
				}
			})
		}
	}
}

// Bad remote input is a typed error and changes nothing.
func checkSyncerPull_BadIndexIsTypedAndHarmless(t *testing.T, nb Factory) {
	for _, tc := range []struct {
		name     string
		manifest string
		want     error
	}{
		{"malformed", `{"format":2,"seq":`, index.ErrCorruptIndex},
		{"newer format", `{"format":99,"seq":1,"shards":[]}`, index.ErrNewerFormat},
		{"bad ranges", `{"format":2,"seq":1,"shards":[{"lo":"b","id":"00000000000000000000000000000000","count":1}]}`, index.ErrCorruptIndex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := nb(t)
			backend.PutBytes(context.Background(), store, ".silt/manifest.json", []byte(tc.manifest), backend.Cond{})
			h := (&bucket{t: t, store: store}).host()
			h.writeMark(map[string]string{"local/file": "mine"})
			c := h.counted()
			if _, err := h.s.Pull(context.Background(), syncer.PullOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("pull: %v, want %v", err, tc.want)
			}
			if _, err := h.s.Push(context.Background(), syncer.PushOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("push: %v, want %v", err, tc.want)
			}
			if puts := c.Counts().Put + c.Counts().CondPut + c.Counts().Delete; puts != 0 {
				t.Errorf("%d writes to a bucket with a bad index", puts)
			}
			if got, _ := h.read("local/file"); got != "mine" {
				t.Error("local file changed")
			}
		})
	}
}

// An unscoped pull after a peer changed one file reads the manifest, the
// one shard that changed, and the file.
func checkSyncerPull_UnscopedAfterPeerTouchedOneShard(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host(withShardMax(8))
	for i := range 20 {
		a.writeMark(modelFiles("aws/ec2/vpc", fmt.Sprint("m", i), 3))
	}
	a.push()
	b := bk.host(withShardMax(8))
	b.pull()
	a.writeMark(map[string]string{"data/aws/ec2/vpc/m7/state/2/raw": "changed"})
	a.push()
	c := b.counted()
	st := b.pull()
	mustEqual(t, "downloaded", st.Files.Downloaded, 1)
	got := c.Counts()
	// A log bucket's reader reads the hint and the one entry past it.
	want := int64(3)
	if h, err := index.ReadHead(context.Background(), bk.store, nil); err == nil && h.IsLog() {
		want = 4
	}
	if got.Get != want || got.Total() != want {
		t.Errorf("requests %+v, want %d GETs (manifest or hint and log entry, one shard, one file)", got, want)
	}
}
