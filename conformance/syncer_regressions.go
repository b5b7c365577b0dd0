package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// The engine bugs of issue 9's list, one named scenario each, plus the
// format 2 rules they led to. Each runs on every backend.

// sync does what `silt sync` does: pull, then push everything.
func (h *host) sync() (syncer.Stats, syncer.Stats) {
	h.t.Helper()
	pl := h.pull()
	ps, err := h.s.Push(context.Background(), syncer.PushOptions{All: true})
	if err != nil {
		h.t.Fatalf("sync push: %v", err)
	}
	return pl, ps
}

// snapshotFiles reads every committed file of the current snapshot through
// a fresh reader, failing the test on any unreadable entry.
func (bk *bucket) snapshotFiles() map[string]string {
	bk.t.Helper()
	ctx := context.Background()
	snap, err := index.OpenSnapshot(ctx, bk.store)
	if err != nil {
		bk.t.Fatal(err)
	}
	out := map[string]string{}
	err = snap.Walk(ctx, "", func(p string, e index.Entry) error {
		rc, err := index.Open(ctx, bk.store, p, e)
		if err != nil {
			return err
		}
		defer rc.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, rerr := rc.Read(buf)
			b.Write(buf[:n])
			if rerr != nil {
				if errors.Is(rerr, errEOF) {
					break
				}
				return rerr
			}
		}
		out[p] = b.String()
		return nil
	})
	if err != nil {
		bk.t.Fatalf("snapshot unreadable: %v", err)
	}
	return out
}

// Issue 9 #1: push; delete a model directory and edit one file; sync:
// nothing comes back and nothing conflicts. A plain pull right after a
// push does not restore a file deleted since either.
func checkRegression_SyncAfterLocalDeleteAndEdit_NothingComesBack(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	a.writeMark(modelFiles("t", "gone", 3))
	a.writeMark(modelFiles("t", "kept", 3))
	a.push()
	a.remove("data/t/gone")
	a.write("data/t/kept/state/1/raw", "edited")
	pl, ps := a.sync()
	mustEqual(t, "pull conflicts", pl.Files.Conflicts, 0)
	mustEqual(t, "pull downloads", pl.Files.Downloaded, 0)
	mustEqual(t, "push conflicts", ps.Files.Conflicts, 0)
	mustEqual(t, "push deleted", ps.Files.Deleted, 4)
	if _, ok := a.read("data/t/gone/state/1/raw"); ok {
		t.Error("a deleted file came back")
	}
	got := bk.snapshotFiles()
	if got["data/t/kept/state/1/raw"] != "edited" || len(got) != 4 {
		t.Errorf("snapshot = %v", got)
	}

	// A plain pull right after a push keeps a local deletion pending.
	a.remove("data/t/kept/state/2/raw")
	st := a.pull()
	mustEqual(t, "conflicts of the pull", st.Files.Conflicts, 0)
	if _, ok := a.read("data/t/kept/state/2/raw"); ok {
		t.Error("pull restored a file deleted locally since it was synced")
	}
}

// Issue 9 #2: two caches push the same path at once: the winner's bytes
// stay readable, the loser reports a conflict and keeps its copy.
func checkRegression_ConcurrentPushesOfOnePath_WinnerStaysReadable(t *testing.T, nb Factory) {
	for trial := range 5 {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) {
			bk := newBucket(t, nb)
			a, b := bk.host(), bk.host()
			a.writeMark(map[string]string{"data/p": "base"})
			a.push()
			b.pull()
			a.writeMark(map[string]string{"data/p": "from a"})
			b.writeMark(map[string]string{"data/p": "from b"})
			var wg sync.WaitGroup
			stats := make([]syncer.Stats, 2)
			errs := make([]error, 2)
			for i, h := range []*host{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stats[i], errs[i] = h.s.Push(context.Background(), syncer.PushOptions{})
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("push %d: %v", i, err)
				}
			}
			winners := 0
			for i, st := range stats {
				if st.Files.Conflicts == 0 {
					winners++
					continue
				}
				own := []string{"from a", "from b"}[i]
				if got, _ := []*host{a, b}[i].read("data/p"); got != own {
					t.Errorf("the loser lost its copy: %q", got)
				}
			}
			mustEqual(t, "winners", winners, 1)
			got := bk.snapshotFiles()["data/p"]
			if got != "from a" && got != "from b" {
				t.Errorf("committed %q", got)
			}
		})
	}
}

// Issue 9 #3: a writer killed at any request of a push: every committed
// entry stays readable by a fresh reader, whether or not it comes back,
// and another writer can commit on top.
func checkRegression_WriterKilledMidPush_CommittedStaysReadable(t *testing.T, nb Factory) {
	setup := func(t *testing.T, store backend.Backend) (*bucket, *host) {
		bk := newBucketOn(t, store)
		h := bk.host(withShardMax(4))
		h.writeMark(map[string]string{"d/a": "a1", "d/b": "b1", "d/c": "c1", "e/x": "x1", "e/y": "y1"})
		h.push()
		h.writeMark(map[string]string{"d/a": "a2", "d/new": "n1", "e/x": "x2"})
		h.remove("d/b")
		h.mark("d/b")
		return bk, h
	}
	probe := wrap.Count(nb(t))
	_, ph := setup(t, probe)
	probe.Reset()
	ph.push()
	n := int(probe.Counts().Total())
	for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter} {
		for i := 1; i <= n; i++ {
			t.Run(fmt.Sprintf("%v/request%d", mode, i), func(t *testing.T) {
				store := nb(t)
				bk, h := setup(t, store)
				f := wrap.Faults(store)
				f.Add(wrap.Rule{Nth: i, Mode: mode, Times: 1 << 20}) // killed: nothing after it lands
				h.s.Close()
				h.cfg.Backend = f
				h.open()
				_, _ = h.s.Push(context.Background(), syncer.PushOptions{})
				h.s.Close() // never comes back
				committed := bk.snapshotFiles()
				fresh := bk.host()
				st := fresh.pull()
				mustEqual(t, "fresh reader conflicts", st.Files.Conflicts, 0)
				for p, c := range committed {
					if got, _ := fresh.read(p); got != c {
						t.Errorf("%s = %q, want committed %q", p, got, c)
					}
				}
				// Another writer commits on top.
				fresh.writeMark(map[string]string{"e/z": "z1"})
				mustEqual(t, "peer conflicts", fresh.push().Files.Conflicts, 0)
				mustEqual(t, "entries after the peer", len(bk.snapshotFiles()), len(committed)+1)
				h.open() // for the cleanup's Close
			})
		}
	}
}

// Issue 9 #4: a pull that removes a file a peer deleted never removes a
// directory a download of the same pull renames into.
func checkRegression_PullRemovalNeverRemovesADownloadsDirectory(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("data/d%02d/old", i)] = fmt.Sprint("old ", i)
	}
	a.writeMark(files)
	a.push()
	b.pull()
	for i := range 20 {
		a.remove(fmt.Sprintf("data/d%02d/old", i))
		a.mark(fmt.Sprintf("data/d%02d/old", i))
		a.write(fmt.Sprintf("data/d%02d/new", i), fmt.Sprint("new ", i))
		a.mark(fmt.Sprintf("data/d%02d/new", i))
	}
	a.push()
	st := b.pull()
	mustEqual(t, "removed", st.Files.Removed, 20)
	mustEqual(t, "downloaded", st.Files.Downloaded, 20)
	for i := range 20 {
		if got, _ := b.read(fmt.Sprintf("data/d%02d/new", i)); got != fmt.Sprint("new ", i) {
			t.Errorf("d%02d/new = %q", i, got)
		}
	}
}

// Issue 9 #5: cache A deletes a file and pushes; cache B, holding an edited
// copy it had synced, pushes: a conflict, and the file is not re-created.
func checkRegression_PushOfEditDeletedRemotely_Conflicts(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	a.writeMark(map[string]string{"data/f": "v1", "data/g": "g"})
	a.push()
	b.pull()
	a.remove("data/f")
	a.mark("data/f")
	mustEqual(t, "deleted", a.push().Files.Deleted, 1)
	b.writeMark(map[string]string{"data/f": "edited by b"})
	st := b.push()
	mustEqual(t, "conflicts", st.Files.Conflicts, 1)
	if st.Files.Conflicts == 1 && !strings.Contains(st.Conflicts[0].Reason, "deleted remotely") {
		t.Errorf("reason %q", st.Conflicts[0].Reason)
	}
	if bk.committed("data/f") {
		t.Error("a push re-created a file deleted remotely since it synced")
	}
	if got, _ := b.read("data/f"); got != "edited by b" {
		t.Errorf("b lost its copy: %q", got)
	}
	mustEqual(t, "still conflicting on the next push", b.push().Files.Conflicts, 1)
}

// Issue 9 #6: a manifest rolled back to an older seq is refused with
// ErrRollback and changes nothing locally or remotely; a manifest at the
// last seq cannot be superseded.
func checkRegression_RolledBackManifest_Refused(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	if !bk.store.Capabilities().ConditionalPut {
		t.Skip("the store has no compare-and-swap: an older silt wrote format 3 there only under a commit lock")
	}
	ctx := context.Background()
	b := bk.host()
	// An older silt's bucket: its manifest is the commit point, its
	// history the copies of the manifests it superseded.
	bk.legacyPush(index.FormatVersion, map[string]string{"data/x": "1"})
	bk.legacyPush(index.FormatVersion, map[string]string{"data/x": "2", "data/y": "y"})
	b.pull()
	head2, _, err := backend.ReadAll(ctx, bk.store, index.ManifestKey, backend.GetOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := backend.ReadAll(ctx, bk.store, index.HistoryKey(1), backend.GetOptions{}, 0)
	if err != nil {
		t.Fatalf("history copy of seq 1: %v", err)
	}
	if _, err := backend.PutBytes(ctx, bk.store, index.ManifestKey, old, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	_, err = b.s.Pull(ctx, syncer.PullOptions{})
	var re *syncer.RollbackError
	if !errors.Is(err, syncer.ErrRollback) || !errors.As(err, &re) || re.Seen != 2 || re.Got != 1 {
		t.Errorf("pull of a rolled-back manifest: %v", err)
	}
	if got, _ := b.read("data/y"); got != "y" {
		t.Error("a rolled-back pull removed a newer file")
	}
	b.writeMark(map[string]string{"data/z": "z"})
	b.restart() // the seen seq survives a restart
	if _, err := b.s.Push(ctx, syncer.PushOptions{}); !errors.Is(err, syncer.ErrRollback) {
		t.Errorf("push onto a rolled-back manifest: %v", err)
	}
	cur, _, _ := backend.ReadAll(ctx, bk.store, index.ManifestKey, backend.GetOptions{}, 0)
	if string(cur) != string(old) {
		t.Error("a refused push changed the manifest")
	}
	if ok, _ := backend.Exists(ctx, bk.store, objKey("z")); ok {
		t.Error("a refused push uploaded data")
	}

	// A push to a bucket in a format this silt no longer writes is
	// refused before it uploads anything.
	if _, err := backend.PutBytes(ctx, bk.store, index.ManifestKey, head2, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	c := bk.host()
	c.writeMark(map[string]string{"data/v": "v"})
	var me *index.MigrateRequiredError
	if _, err := c.s.Push(ctx, syncer.PushOptions{}); !errors.Is(err, index.ErrMigrateRequired) || !errors.As(err, &me) || me.Format != index.FormatVersion {
		t.Errorf("push to a format-3 bucket: %v", err)
	}
	if ok, _ := backend.Exists(ctx, bk.store, objKey("v")); ok {
		t.Error("a push refused for the bucket's format uploaded data")
	}

	// The last sequence cannot be superseded.
	m, err := index.DecodeManifest(index.ManifestKey, old)
	if err != nil {
		t.Fatal(err)
	}
	m.Seq = index.MaxSeq - 1
	if _, err := backend.PutBytes(ctx, bk.store, index.ManifestKey, index.EncodeManifest(m), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := index.Migrate(ctx, bk.store, index.MigrateOptions{}); err != nil {
		t.Fatalf("migrate at seq %d: %v", m.Seq, err)
	}
	c.restart()
	if _, err := c.s.Push(ctx, syncer.PushOptions{}); !errors.Is(err, syncer.ErrSeqExhausted) {
		t.Errorf("push past the last seq: %v", err)
	}
}

// A file and a directory of one name: the committing push reports a
// conflict, and the index never holds both.
func checkRegression_FileAndDirectoryOfOneName_Conflict(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	a.writeMark(map[string]string{"data/a": "file"})
	a.push()
	b.writeMark(map[string]string{"data/a/b": "under a dir", "data/ok": "ok"})
	st := b.push()
	mustEqual(t, "conflicts (dir over a file)", st.Files.Conflicts, 1)
	if bk.committed("data/a/b") || !bk.committed("data/ok") {
		t.Error("index holds a file and a directory of one name, or lost the rest")
	}
	c := bk.host()
	c.writeMark(map[string]string{"data/q/r": "dir"})
	c.push()
	d := bk.host()
	d.writeMark(map[string]string{"data/q": "file over a dir"})
	mustEqual(t, "conflicts (file over a dir)", d.push().Files.Conflicts, 1)
	if bk.committed("data/q") {
		t.Error("index holds a file and a directory of one name")
	}
}

// Names a store key could not carry sync; names the index cannot carry
// are reported by path; a cache nested in the cache never syncs its .silt.
func checkRegression_HostileNames_SyncOrAreReported(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a, b := bk.host(), bk.host()
	names := map[string]string{"data/back\\slash": "1", "data/new\nline": "2", "data/sp ace": "3"}
	for p, c := range names {
		a.write(p, c)
	}
	a.write("data/inner/.silt/state.db", "nested cache state")
	bad := "data/bad\xff"
	if err := os.WriteFile(filepath.Join(a.root(), "data", "bad\xff"), []byte("x"), 0o644); err != nil {
		t.Skipf("the local filesystem refuses invalid UTF-8 names: %v", err)
	}
	st, err := a.s.Push(context.Background(), syncer.PushOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "conflicts", st.Files.Conflicts, 1)
	if st.Files.Conflicts == 1 && st.Conflicts[0].Path != bad {
		t.Errorf("reported %q", st.Conflicts[0].Path)
	}
	b.pull()
	for p, c := range names {
		if got, _ := b.read(p); got != c {
			t.Errorf("%q = %q, want %q", p, got, c)
		}
	}
	if bk.committed("data/inner/.silt/state.db") {
		t.Error("a nested cache's .silt synced")
	}
}

// PushOptions.Paths pushes only those paths, not marks left from earlier.
func checkRegression_PushPaths_OnlyThosePaths(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	a.writeMark(map[string]string{"data/left": "from an earlier conflict", "data/m/x": "x"})
	st, err := a.s.Push(context.Background(), syncer.PushOptions{Paths: []string{"data/m"}})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "uploaded", st.Files.Uploaded, 1)
	if bk.committed("data/left") || !bk.committed("data/m/x") {
		t.Error("push --path pushed outside its paths")
	}
	mustEqual(t, "the other mark stays", a.push().Files.Uploaded, 1)
}

// Temporary downloads a killed pull left are removed by the next Open:
// in .silt/tmp and in its shards (a batch's new files are written in
// .silt/tmp/0 to f).
func checkRegression_KilledPullTempFiles_Removed(t *testing.T, nb Factory) {
	bk := newBucket(t, nb)
	a := bk.host()
	tmp := filepath.Join(a.dir, ".silt", "tmp")
	left := []string{filepath.Join(tmp, "dl-deadbeef"), filepath.Join(tmp, "d", "dl-d00dfeed")}
	for _, f := range left {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.restart()
	if got := tempDownloads(t, a.dir); len(got) != 0 {
		t.Errorf("temporary downloads left: %v", got)
	}
}

// tempDownloads lists the temporary downloads (dl-*) under dir's
// .silt/tmp, its shards included.
func tempDownloads(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	root := filepath.Join(dir, ".silt", "tmp")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "dl-") {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

var errEOF = io.EOF
