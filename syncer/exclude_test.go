package syncer_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// fileStore opens a file:// store in a temporary directory, as the CLI
// opens one.
func fileStore(t *testing.T) backend.Backend {
	t.Helper()
	b, err := backend.Open(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openWith(t *testing.T, b backend.Backend, cfg syncer.Config) *syncer.Syncer {
	t.Helper()
	cfg.Backend = b
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	s, err := syncer.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s *syncer.Syncer, p, body string) {
	t.Helper()
	abs := filepath.Join(s.Root(), filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// remotePaths lists the committed paths with their entries.
func remoteEntries(t *testing.T, b backend.Backend) map[string]index.Entry {
	t.Helper()
	snap, err := index.OpenSnapshot(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]index.Entry{}
	if err := snap.Walk(t.Context(), "", func(p string, e index.Entry) error { out[p] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustPush(t *testing.T, s *syncer.Syncer, opts syncer.PushOptions) syncer.Stats {
	t.Helper()
	st, err := s.Push(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustPull(t *testing.T, s *syncer.Syncer, opts syncer.PullOptions) syncer.Stats {
	t.Helper()
	st, err := s.Pull(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Rules from .siltignore, Config and the push's options are all applied;
// an include wins; nothing excluded reaches the index.
func TestSyncer_Push_Excluded_NeverUploaded(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{Exclude: []string{"*.lock"}, Include: []string{"keep.lock"}})
	put(t, s, ".siltignore", "# host bookkeeping\n.namespace.json\n_catalog.db*\ncache/\n!important.tmp\n")
	for _, p := range []string{".namespace.json", "_catalog.db", "_catalog.db-wal", "m/.lock", "keep.lock",
		"cache/a", "cache/b/c", "data/x", "data/y.tmp", "notes.txt"} {
		put(t, s, p, "body of "+p)
	}
	st := mustPush(t, s, syncer.PushOptions{All: true, Exclude: []string{"*.tmp"}})
	got := slices.Sorted(maps.Keys(remoteEntries(t, b)))
	want := []string{".siltignore", "data/x", "keep.lock", "notes.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("committed %q, want %q", got, want)
	}
	// .namespace.json, _catalog.db, _catalog.db-wal, m/.lock, data/y.tmp,
	// and cache/a and cache/b/c one by one: the include "keep.lock" could
	// match at any depth, so the walk reads the excluded cache/ too.
	if st.Files.Excluded != 7 {
		t.Errorf("Files.Excluded = %d, want 7", st.Files.Excluded)
	}
	status, err := s.Status(t.Context(), false)
	if err != nil || status.Excluded != 7 {
		t.Errorf("Status.Excluded = %d (%v), want 7", status.Excluded, err)
	}
}

// A file pushed before a rule excluded it is never deleted remotely, by a
// walk of everything nor by an explicit mark, after it goes locally.
func TestSyncer_Push_Excluded_NeverDeletedRemotely(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{})
	put(t, s, "logs/a.log", "a")
	put(t, s, "b.log", "b")
	mustPush(t, s, syncer.PushOptions{All: true})
	put(t, s, ".siltignore", "logs/\n*.log\n")
	os.RemoveAll(filepath.Join(s.Root(), "logs"))
	os.Remove(filepath.Join(s.Root(), "b.log"))
	for _, opts := range []syncer.PushOptions{{All: true}, {Paths: []string{"b.log", "logs"}}} {
		if err := s.MarkDirty("b.log"); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkAllDirty(); err != nil {
			t.Fatal(err)
		}
		st := mustPush(t, s, opts)
		if st.Files.Deleted != 0 {
			t.Errorf("%+v: deleted %d", opts, st.Files.Deleted)
		}
	}
	got := remoteEntries(t, b)
	if _, ok := got["logs/a.log"]; !ok {
		t.Error("logs/a.log was deleted remotely")
	}
	if _, ok := got["b.log"]; !ok {
		t.Error("b.log was deleted remotely")
	}
}

// A pull neither writes, overwrites nor removes an excluded path, and
// counts it; a later pull without the rule brings it.
func TestSyncer_Pull_Excluded_NeverWrittenOrRemoved(t *testing.T) {
	b := fileStore(t)
	a := openWith(t, b, syncer.Config{})
	put(t, a, "model.bin", "remote bytes")
	put(t, a, "gone.bin", "peer deletes me")
	put(t, a, "data/x", "x")
	mustPush(t, a, syncer.PushOptions{All: true})

	c := openWith(t, b, syncer.Config{})
	mustPull(t, c, syncer.PullOptions{})
	put(t, c, "model.bin", "local edit the rules protect")
	os.Remove(filepath.Join(a.Root(), "gone.bin"))
	mustPush(t, a, syncer.PushOptions{All: true})

	st := mustPull(t, c, syncer.PullOptions{Exclude: []string{"*.bin"}})
	if st.Files.Conflicts != 0 || st.Files.Removed != 0 || st.Files.Downloaded != 0 || st.Files.Excluded != 1 {
		t.Errorf("pull with *.bin excluded: %+v", st.Files)
	}
	if body, _ := os.ReadFile(filepath.Join(c.Root(), "model.bin")); string(body) != "local edit the rules protect" {
		t.Errorf("model.bin = %q", body)
	}
	if _, err := os.Stat(filepath.Join(c.Root(), "gone.bin")); err != nil {
		t.Errorf("gone.bin was removed locally: %v", err)
	}

	fresh := openWith(t, b, syncer.Config{Exclude: []string{"model.bin"}})
	mustPull(t, fresh, syncer.PullOptions{})
	if _, err := os.Stat(filepath.Join(fresh.Root(), "model.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("model.bin was downloaded despite the rule: %v", err)
	}
	st = mustPull(t, fresh, syncer.PullOptions{Include: []string{"model.bin"}})
	if st.Files.Downloaded != 1 {
		t.Errorf("pull with the rule lifted downloaded %d, want 1 (the shard stayed unreconciled)", st.Files.Downloaded)
	}
}

// The walk does not read an excluded directory: its thousand files are
// neither examined nor counted one by one, unless an include reaches in.
func TestSyncer_Push_Excluded_DirectoryNotRead(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{Exclude: []string{"big/"}})
	for i := range 1000 {
		put(t, s, "big/"+strings.Repeat("d/", i%4)+"f"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "x")
	}
	put(t, s, "small", "s")
	st := mustPush(t, s, syncer.PushOptions{All: true})
	if st.Local.Examined != 1 || st.Files.Excluded != 1 || st.Files.Uploaded != 1 {
		t.Errorf("examined %d, excluded %d, uploaded %d; want 1, 1, 1", st.Local.Examined, st.Files.Excluded, st.Files.Uploaded)
	}
	put(t, s, "big/d/keep.bin", "k")
	st = mustPush(t, s, syncer.PushOptions{All: true, Include: []string{"big/d/keep.bin"}})
	if _, ok := remoteEntries(t, b)["big/d/keep.bin"]; !ok || st.Files.Uploaded != 1 {
		t.Errorf("the include did not reach big/d/keep.bin: %+v", st.Files)
	}
}

// A rule that does not parse is a typed error naming it; nothing changes.
func TestSyncer_Open_BadPattern(t *testing.T) {
	_, err := syncer.Open(t.Context(), syncer.Config{Backend: fileStore(t), Dir: t.TempDir(), Exclude: []string{"[oops"}})
	var pe *syncer.PatternError
	if !errors.As(err, &pe) || !errors.Is(err, syncer.ErrBadPattern) || pe.Source != "Config.Exclude" {
		t.Fatalf("Open: %v", err)
	}
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{})
	put(t, s, "a", "a")
	put(t, s, ".siltignore", "ok\nbad\\\n")
	if _, err := s.Push(t.Context(), syncer.PushOptions{All: true}); !errors.As(err, &pe) || pe.Source != ".siltignore" || pe.Line != 2 {
		t.Fatalf("push with a bad .siltignore: %v", err)
	}
	if got := remoteEntries(t, b); len(got) != 0 {
		t.Errorf("a refused push committed %d entries", len(got))
	}
	if _, err := s.Pull(t.Context(), syncer.PullOptions{Exclude: []string{"a//b"}}); !errors.Is(err, syncer.ErrBadPattern) {
		t.Errorf("pull with a bad option: %v", err)
	}
}

// One file that cannot be read is a conflict naming it, with its reason;
// the rest of the push commits, and the file stays dirty for the next
// push. Root reads a 0000 file, so the open is failed through a hook.
func TestSyncer_Push_UnreadableFile_IsAConflictNotAnAbort(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{})
	for _, p := range []string{"a", "denied", "gone", "z"} {
		put(t, s, p, "body of "+p)
	}
	syncer.FailOpen(s, func(p string) error {
		switch p {
		case "denied":
			return fs.ErrPermission
		case "gone":
			return fs.ErrNotExist
		}
		return nil
	})
	for _, p := range []string{"a", "denied", "gone", "z"} {
		if err := s.MarkDirty(p); err != nil {
			t.Fatal(err)
		}
	}
	st := mustPush(t, s, syncer.PushOptions{})
	reasons := map[string]string{}
	for _, c := range st.Conflicts {
		reasons[c.Path] = c.Reason
	}
	if !strings.Contains(reasons["denied"], "permission denied") || !strings.Contains(reasons["gone"], "vanished") || len(reasons) != 2 {
		t.Errorf("conflicts %v", reasons)
	}
	if got := slices.Sorted(maps.Keys(remoteEntries(t, b))); !slices.Equal(got, []string{"a", "z"}) {
		t.Errorf("committed %q, want a and z", got)
	}
	syncer.FailOpen(s, nil)
	st = mustPush(t, s, syncer.PushOptions{})
	if st.Files.Uploaded != 2 {
		t.Errorf("the next push uploaded %d, want the 2 that stayed dirty", st.Files.Uploaded)
	}
}

// The same with a real chmod 000, where the test is not run as root (root
// reads the file, so there it only checks the push succeeds).
func TestSyncer_Push_Regression_Chmod000DoesNotAbort(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{})
	put(t, s, "ok", "ok")
	put(t, s, "secret", "s")
	if err := os.Chmod(filepath.Join(s.Root(), "secret"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(s.Root(), "secret"), 0o644)
	st := mustPush(t, s, syncer.PushOptions{All: true})
	if _, ok := remoteEntries(t, b)["ok"]; !ok {
		t.Error("ok was not pushed")
	}
	if os.Geteuid() != 0 && (st.Files.Conflicts != 1 || !strings.Contains(st.Conflicts[0].Reason, "permission denied")) {
		t.Errorf("conflicts %v", st.Conflicts)
	}
}

// A push of one path that a rule excludes says so, rather than that the
// path matches nothing.
func TestSyncer_Push_Paths_ExcludedPathSaysWhy(t *testing.T) {
	b := fileStore(t)
	s := openWith(t, b, syncer.Config{Exclude: []string{"scratch/"}})
	put(t, s, "scratch/x", "x")
	st := mustPush(t, s, syncer.PushOptions{Paths: []string{"scratch"}})
	if len(st.Changes) != 1 || st.Changes[0].Reason != "excluded by an exclude rule" || st.Files.Excluded != 1 {
		t.Errorf("changes %+v, files %+v", st.Changes, st.Files)
	}
}
