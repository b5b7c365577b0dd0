package syncer_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// twoPhaseWorld is a cache (a) and a peer (b) on one file:// bucket, both
// holding x at "base".
func twoPhaseWorld(t *testing.T) (a, b *syncer.Syncer) {
	t.Helper()
	store, err := backend.Open(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	open := func() *syncer.Syncer {
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b = open(), open()
	writeX(t, a, "base")
	if _, err := a.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func writeX(t *testing.T, s *syncer.Syncer, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Root(), "x"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDirty("x"); err != nil {
		t.Fatal(err)
	}
}

func readX(t *testing.T, s *syncer.Syncer) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Root(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lostCommit prepares a's edit of x, lets b commit its own edit of x, and
// commits a's manifest, which must lose the race as a conflict on x.
func lostCommit(t *testing.T, a, b *syncer.Syncer, mine, theirs string) syncer.Stats {
	t.Helper()
	writeX(t, a, mine)
	m, prep, err := a.PreparePush(t.Context(), syncer.PushOptions{})
	if err != nil || prep.Files.Conflicts != 0 {
		t.Fatalf("prepare: %v, conflicts %v", err, prep.Conflicts)
	}
	writeX(t, b, theirs)
	if st, err := b.Push(t.Context(), syncer.PushOptions{}); err != nil || st.Files.Uploaded != 1 {
		t.Fatalf("peer push: %v, %+v", err, st.Files)
	}
	st, err := a.CommitPush(t.Context(), m, nil)
	if err != nil || st.Files.Conflicts != 1 || st.Conflicts[0].Path != "x" {
		t.Fatalf("commit: %v, conflicts %v; want one on x", err, st.Conflicts)
	}
	return st
}

// A commit that loses the race for a path to a peer's commit is remembered
// as the conflict a plain push would have found: Status lists it with its
// reason, the path stays dirty, and Resolve settles it without Force.
func TestSyncer_CommitPush_LostRaceIsRememberedAsConflict(t *testing.T) {
	a, b := twoPhaseWorld(t)
	st := lostCommit(t, a, b, "mine", "theirs")
	status, err := a.Status(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Conflicts) != 1 || status.Conflicts[0].Path != "x" || status.Conflicts[0].Reason != st.Conflicts[0].Reason ||
		status.Conflicts[0].Op != "commit" || status.Conflicts[0].Seq != st.Seq {
		t.Fatalf("status conflicts %+v, want x with the commit's reason %q at seq %d", status.Conflicts, st.Conflicts[0].Reason, st.Seq)
	}
	if !slices.Contains(status.Dirty, "x") {
		t.Fatalf("x is not dirty after the lost commit: %v", status.Dirty)
	}

	// Taking the remote copy needs no Force and keeps the local edit.
	if _, err := a.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"x"}, Keep: syncer.TakeRemote}); err != nil {
		t.Fatalf("resolve take-remote without force: %v", err)
	}
	if got := readX(t, a); got != "theirs" {
		t.Fatalf("x = %q after take-remote, want the peer's copy", got)
	}
	status, err = a.Status(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Conflicts) != 0 || len(status.Backups) != 1 || status.Backups[0].Path != "x" {
		t.Fatalf("after take-remote: conflicts %+v, backups %+v; want none and x's backup", status.Conflicts, status.Backups)
	}
}

// Keeping the local copy of a lost commit pushes it over the peer's.
func TestSyncer_CommitPush_LostRaceKeepLocalPushes(t *testing.T) {
	a, b := twoPhaseWorld(t)
	lostCommit(t, a, b, "mine", "theirs")
	if _, err := a.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"x"}, Keep: syncer.KeepLocal}); err != nil {
		t.Fatal(err)
	}
	st, err := a.Push(t.Context(), syncer.PushOptions{})
	if err != nil || st.Files.Uploaded != 1 || st.Files.Conflicts != 0 {
		t.Fatalf("push after keep-local: %v, %+v", err, st.Files)
	}
	if status, err := a.Status(t.Context(), false); err != nil || len(status.Conflicts) != 0 || len(status.Dirty) != 0 {
		t.Fatalf("after the push: %+v, %v; want no conflict and nothing dirty", status, err)
	}
	if _, err := b.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readX(t, b); got != "mine" {
		t.Fatalf("peer has x = %q, want the kept local copy", got)
	}
}

// A later two-phase push that commits the path settles the remembered
// conflict, as a plain push does.
func TestSyncer_CommitPush_CommitSettlesRememberedConflict(t *testing.T) {
	a, b := twoPhaseWorld(t)
	lostCommit(t, a, b, "mine", "theirs")
	if _, err := a.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"x"}, Keep: syncer.KeepLocal}); err != nil {
		t.Fatal(err)
	}
	m, _, err := a.PreparePush(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := a.CommitPush(t.Context(), m, nil); err != nil || st.Files.Conflicts != 0 {
		t.Fatalf("commit after keep-local: %v, %v", err, st.Conflicts)
	}
	if status, err := a.Status(t.Context(), false); err != nil || len(status.Conflicts) != 0 || len(status.Dirty) != 0 {
		t.Fatalf("after the commit: %+v, %v; want no conflict and nothing dirty", status, err)
	}
}

// A conflict PreparePush finds (the peer committed before the prepare) is
// remembered too, as the plain push that would have found it.
func TestSyncer_PreparePush_ConflictIsRemembered(t *testing.T) {
	a, b := twoPhaseWorld(t)
	writeX(t, b, "theirs")
	if _, err := b.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	writeX(t, a, "mine")
	_, prep, err := a.PreparePush(t.Context(), syncer.PushOptions{})
	if err != nil || prep.Files.Conflicts != 1 {
		t.Fatalf("prepare: %v, conflicts %v; want one on x", err, prep.Conflicts)
	}
	status, err := a.Status(t.Context(), false)
	if err != nil || len(status.Conflicts) != 1 || status.Conflicts[0].Path != "x" || status.Conflicts[0].Op != "prepare" {
		t.Fatalf("status conflicts %+v (%v), want x from the prepare", status.Conflicts, err)
	}
	if _, err := a.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"x"}, Keep: syncer.TakeRemote}); err != nil {
		t.Fatalf("resolve take-remote without force: %v", err)
	}
	if got := readX(t, a); got != "theirs" {
		t.Fatalf("x = %q after take-remote, want the peer's copy", got)
	}
}
