package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/siltsync/silt/internal/localhook"
	"github.com/siltsync/silt/syncer"
)

// Regression tests of issue 19's local-writer failures: a pull, hydrate or
// resolve --take-remote replaced a file the user edited while it ran, and
// a local deletion that lost to a peer's edit left the file lazy with no
// conflict. Each failed on the engine before the fix.

// lostRemovalReported reports whether st says a local deletion lost to a
// remote edit (the remote copy wins).
func lostRemovalReported(st syncer.Stats) bool {
	for _, c := range st.Changes {
		if strings.Contains(c.Reason, "the remote copy wins") {
			return true
		}
	}
	return false
}

// appendTo appends line to the cache file p of h. It may run on a pull's
// goroutine (from a localhook), so it reports with Error, never Fatal.
func (h *host) appendTo(p, line string) {
	f, err := os.OpenFile(filepath.Join(h.root(), filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.WriteString(line)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		h.t.Error(err)
	}
}

// sharedV2 commits v1 of p from a, pulls it into b, then commits v2 from a:
// b's next pull replaces its unmodified v1.
func sharedV2(bk *bucket, p string) (a, b *host) {
	a, b = bk.host(), bk.host()
	a.writeMark(map[string]string{p: "v1\n"})
	a.push()
	b.pull()
	a.writeMark(map[string]string{p: "v2\n"})
	a.push()
	return a, b
}

// The pull planned on an unmodified file, the user appended a line, then
// the download was renamed over it: the append was gone, no conflict.
func TestModel_Regression_PullOverwritesAppendAfterPlanning(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		const p = "data/t/1/latest"
		_, b := sharedV2(bk, p)
		defer localhook.Set(b.s.Root(), func(q string, s localhook.Stage) {
			if q == p && s == localhook.BeforeCheck {
				b.appendTo(p, "mine\n")
			}
		})()
		st := b.pull()
		if got, _ := b.read(p); got != "v1\nmine\n" {
			t.Errorf("after the pull %s holds %q, want the local edit %q", p, got, "v1\nmine\n")
		}
		if st.Files.Conflicts != 1 {
			t.Errorf("pull reported %v, want one conflict for %s", st.Conflicts, p)
		}
		// The next pull judges the file again and reports it again.
		if st := b.pull(); st.Files.Conflicts != 1 {
			t.Errorf("the next pull reported %v, want the conflict again", st.Conflicts)
		}
	})
}

// An edit through a descriptor opened before the rename lands in the
// replaced inode after the check: it is kept as a conflict copy that
// status lists and resolve --keep-local puts back.
func TestModel_Regression_PullOverwritesEditInReplacedFile(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		const p = "data/t/1/latest"
		_, b := sharedV2(bk, p)
		var f *os.File
		unset := localhook.Set(b.s.Root(), func(q string, s localhook.Stage) {
			var err error
			switch {
			case q != p:
			case s == localhook.BeforeRename:
				f, err = os.OpenFile(filepath.Join(b.root(), filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
			case s == localhook.AfterRename:
				_, err = f.WriteString("late\n")
				err = errors.Join(err, f.Close())
			}
			if err != nil {
				t.Error(err) // on the pull's goroutine
			}
		})
		st := b.pull()
		unset()
		if got, _ := b.read(p); got != "v2\n" {
			t.Errorf("after the pull %s holds %q, want the remote copy", p, got)
		}
		if len(st.Conflicts) != 1 || st.Conflicts[0].Copy == "" {
			t.Fatalf("pull reported %v, want one conflict with a kept copy", st.Conflicts)
		}
		kept, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(st.Conflicts[0].Copy)))
		if err != nil || string(kept) != "v1\nlate\n" {
			t.Fatalf("kept copy %q (%v), want the edited local copy", kept, err)
		}
		b.pull()
		status, err := b.s.Status(context.Background(), false)
		if err != nil || len(status.Conflicts) != 1 || status.Conflicts[0].Copy == "" {
			t.Fatalf("status after the next pull lists %v (%v), want the conflict with its copy", status.Conflicts, err)
		}
		if _, err := b.s.Resolve(context.Background(), syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.KeepLocal}); err != nil {
			t.Fatal(err)
		}
		if got, _ := b.read(p); got != "v1\nlate\n" {
			t.Errorf("resolve --keep-local left %q, want the kept copy back", got)
		}
		if st := b.push(); st.Files.Uploaded != 1 || st.Files.Conflicts != 0 {
			t.Errorf("push after keep-local: %d uploaded, conflicts %v", st.Files.Uploaded, st.Conflicts)
		}
	})
}

// HydrateFile of a lazy file the user created meanwhile replaced it.
func TestModel_Regression_HydrateOverwritesLocalCreation(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		const p = "data/t/1/raw"
		a, b := bk.host(), bk.host()
		a.writeMark(map[string]string{p: "remote"})
		a.push()
		if _, err := b.s.Pull(context.Background(), syncer.PullOptions{MetadataOnly: true}); err != nil {
			t.Fatal(err)
		}
		defer localhook.Set(b.s.Root(), func(q string, s localhook.Stage) {
			if q == p && s == localhook.BeforeRename {
				b.write(p, "mine")
			}
		})()
		ok, _, err := b.s.HydrateFile(context.Background(), p)
		if err != nil || !ok {
			t.Fatalf("HydrateFile = %v, %v", ok, err)
		}
		if got, _ := b.read(p); got != "mine" {
			t.Errorf("after HydrateFile %s holds %q, want the file the user wrote", p, got)
		}
	})
}

// resolve --take-remote replaced the local copy and kept nothing of it.
func TestModel_Regression_TakeRemoteLosesLocalCopy(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		ctx := context.Background()
		const p = "data/t/1/latest"
		_, b := sharedV2(bk, p)
		b.write(p, "mine\n")
		if st := b.pull(); st.Files.Conflicts != 1 {
			t.Fatalf("pull reported %v, want a conflict", st.Conflicts)
		}
		if _, err := b.s.Resolve(ctx, syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.TakeRemote}); err != nil {
			t.Fatal(err)
		}
		if got, _ := b.read(p); got != "v2\n" {
			t.Fatalf("take-remote left %q", got)
		}
		status, err := b.s.Status(ctx, false)
		if err != nil || len(status.Backups) != 1 || status.Backups[0].Path != p {
			t.Fatalf("status lists backups %v (%v), want the replaced copy of %s", status.Backups, err, p)
		}
		if data, err := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(status.Backups[0].Copy))); err != nil || string(data) != "mine\n" {
			t.Fatalf("backup holds %q (%v)", data, err)
		}
		if _, err := b.s.Restore(ctx, p); err != nil {
			t.Fatal(err)
		}
		if got, _ := b.read(p); got != "mine\n" {
			t.Errorf("restore left %q, want the backup", got)
		}
	})
}

// resolve --take-remote of a path with unpushed edits and no conflict
// replaced them; now it refuses unless forced.
func TestModel_Regression_TakeRemoteRefusesUnpushedEdits(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		ctx := context.Background()
		const p = "data/t/1/latest"
		a, b := bk.host(), bk.host()
		a.writeMark(map[string]string{p: "v1\n"})
		a.push()
		b.pull()
		b.write(p, "unpushed\n")
		_, err := b.s.Resolve(ctx, syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.TakeRemote})
		if !errors.Is(err, syncer.ErrUnpushedEdits) {
			t.Fatalf("take-remote of unpushed edits: %v, want ErrUnpushedEdits", err)
		}
		if got, _ := b.read(p); got != "unpushed\n" {
			t.Fatalf("a refused take-remote changed the file to %q", got)
		}
		if _, err := b.s.Resolve(ctx, syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.TakeRemote, Force: true}); err != nil {
			t.Fatal(err)
		}
		status, _ := b.s.Status(ctx, false)
		if got, _ := b.read(p); got != "v1\n" || len(status.Backups) != 1 {
			t.Errorf("forced take-remote left %q with backups %v", got, status.Backups)
		}
	})
}

// Three caches share data/a/1/raw; one edits and pushes, another deletes
// the file (or its model directory) and pushes (all, or Paths) and pulls
// (or syncs): the deletion lost, the file stayed lazy, never installed,
// and no conflict was listed. The remote edit wins and is installed.
func TestModel_Regression_DeleteVersusEditLeavesFileLazy(t *testing.T) {
	const p = "data/a/1/raw"
	for _, shape := range []struct {
		name, del   string
		paths, sync bool
	}{
		{"file/pushAll/pull", p, false, false},
		{"file/pushPaths/sync", p, true, true},
		{"dir/pushAll/sync", "data/a/1", false, true},
		{"dir/pushPaths/pull", "data/a/1", true, false},
		{"file/sync", p, false, true},
	} {
		t.Run(shape.name, func(t *testing.T) {
			regress(t, "", func(t *testing.T, bk *bucket) {
				ctx := context.Background()
				a, b, c := bk.host(), bk.host(), bk.host()
				a.writeMark(map[string]string{p: "v1", "data/a/1/latest": "1"})
				a.push()
				b.pull()
				c.pull()
				a.writeMark(map[string]string{p: "v2"})
				a.push()
				b.remove(shape.del)
				b.mark(shape.del)
				if shape.name != "file/sync" {
					opts := syncer.PushOptions{All: true}
					if shape.paths {
						opts = syncer.PushOptions{Paths: []string{shape.del}}
					}
					st, err := b.s.Push(ctx, opts)
					if err != nil || st.Files.Conflicts != 0 || !lostRemovalReported(st) {
						t.Fatalf("push of the lost deletion: conflicts %v, changes %v, %v", st.Conflicts, st.Changes, err)
					}
				}
				var pulled syncer.Stats
				var err error
				if pulled, err = b.s.Pull(ctx, syncer.PullOptions{KeepLazy: shape.sync}); err != nil {
					t.Fatal(err)
				}
				if shape.sync {
					if _, err := b.s.Push(ctx, syncer.PushOptions{All: true}); err != nil {
						t.Fatal(err)
					}
				}
				if got, _ := b.read(p); got != "v2" {
					t.Errorf("after the pull %s holds %q, want the remote edit installed", p, got)
				}
				if pulled.Files.Conflicts != 0 {
					t.Errorf("pull reported conflicts %v, want the remote copy installed", pulled.Conflicts)
				}
				status, err := b.s.Status(ctx, false)
				if err != nil || status.Lazy != 0 || len(status.Conflicts) != 0 {
					t.Errorf("status: %d lazy, conflicts %v (%v); want none", status.Lazy, status.Conflicts, err)
				}
				if st, _ := b.sync(); st.Files.Downloaded != 0 || st.Files.Conflicts != 0 {
					t.Errorf("the next sync downloaded %d, conflicts %v", st.Files.Downloaded, st.Conflicts)
				}
				c.pull()
				if got, _ := c.read(p); got != "v2" {
					t.Errorf("the third cache holds %q", got)
				}
			})
		})
	}
}

// Found by the local writer: a pull removed a file a peer deleted after
// planning that it was unchanged, though the user had edited it since.
func TestModel_Regression_PullRemovesFileEditedAfterPlanning(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		const p = "data/t/1/latest"
		a, b := bk.host(), bk.host()
		a.writeMark(map[string]string{p: "v1\n", "data/t/1/raw": "r"})
		a.push()
		b.pull()
		a.remove(p)
		a.mark(p)
		a.push()
		var f *os.File
		appended := false
		defer localhook.Set(b.s.Root(), func(q string, s localhook.Stage) {
			var err error
			switch {
			case q != p:
			case s == localhook.BeforeCheck && !appended:
				appended = true
				b.appendTo(p, "mine\n")
			case s == localhook.BeforeRename:
				f, err = os.OpenFile(filepath.Join(b.root(), filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
			case s == localhook.AfterRename:
				_, err = f.WriteString("late\n")
				err = errors.Join(err, f.Close())
			}
			if err != nil {
				t.Error(err)
			}
		})()
		st := b.pull()
		if got, _ := b.read(p); got != "v1\nmine\n" || st.Files.Conflicts != 1 {
			t.Fatalf("after the pull %s holds %q (conflicts %v), want the local edit kept and reported", p, got, st.Conflicts)
		}
		// Settled by taking the remote side: the local copy goes, kept as
		// a backup with the write that raced its removal.
		if _, err := b.s.Resolve(context.Background(), syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.TakeRemote, Force: true}); err != nil {
			t.Fatal(err)
		}
		status, _ := b.s.Status(context.Background(), false)
		if _, ok := b.read(p); ok || len(status.Backups) != 1 {
			t.Fatalf("take-remote of a deletion: file present %v, backups %v", ok, status.Backups)
		}
		data, _ := os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(status.Backups[0].Copy)))
		if string(data) != "v1\nmine\nlate\n" {
			t.Errorf("the backup holds %q, want the edit and the write that raced the removal", data)
		}
	})
}

// The model kept its mark of a path after resolve --take-remote settled
// it, so it expected a later unmarked deletion of the path to be pushed
// (found by the CI seed of the model with gc deleting log entries, which
// only changed which sequence was drawn). The syncer is right: taking the
// remote drops the mark, and a default push sends marks only.
func TestModel_Regression_TakeRemoteDropsMark(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		ctx := context.Background()
		const p = "data/t/1/latest"
		a, b := bk.host(), bk.host()
		a.writeMark(map[string]string{p: "v1\n"})
		a.push()
		b.pull()
		b.writeMark(map[string]string{p: "unpushed\n"})
		if _, err := b.s.Resolve(ctx, syncer.ResolveOptions{Paths: []string{p}, Keep: syncer.TakeRemote, Force: true}); err != nil {
			t.Fatal(err)
		}
		b.remove(p)
		if st := b.push(); st.Commit != nil {
			t.Errorf("a push after take-remote and an unmarked deletion committed (seq %d)", st.Seq)
		}
		if got := bk.snapshotFiles()[p]; got != "v1\n" {
			t.Errorf("committed %s = %q, want the remote copy take-remote kept", p, got)
		}
	})
}

// A pull that ran out of disk left Status reading as up to date with
// files missing (issue 37's adversarial pass): Status.PullIncomplete must
// say a pull stopped part way until a whole pull succeeds, a scoped pull
// not clearing it, and the rerun must install what the failed one did not.
func TestModel_Regression_FullDiskLeftStatusUpToDate(t *testing.T) {
	regress(t, "", func(t *testing.T, bk *bucket) {
		a, b := bk.host(), bk.host()
		a.writeMark(map[string]string{"data/t/1/a": "a", "data/t/1/b": "b", "data/t/2/c": "c"})
		a.push()
		unset := localhook.SetWriteFault(b.s.Root(), func(string) error { return syscall.ENOSPC })
		_, err := b.s.Pull(context.Background(), syncer.PullOptions{})
		unset()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("pull on a full disk: %v, want ENOSPC", err)
		}
		status := func() bool {
			st, err := b.s.Status(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			return st.PullIncomplete
		}
		if !status() {
			t.Error("after the failed pull Status.PullIncomplete is false")
		}
		b.pull("data/t/2")
		if !status() {
			t.Error("a scoped pull cleared Status.PullIncomplete")
		}
		b.pull()
		if status() {
			t.Error("a whole pull succeeded and Status.PullIncomplete stays")
		}
		for p, want := range map[string]string{"data/t/1/a": "a", "data/t/1/b": "b", "data/t/2/c": "c"} {
			if got, _ := b.read(p); got != want {
				t.Errorf("%s = %q after the rerun, want %q", p, got, want)
			}
		}
	})
}
