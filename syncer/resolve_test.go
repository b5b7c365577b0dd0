package syncer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

func TestSyncer_Resolve_KeepLocalAfterPullConflict(t *testing.T) {
	store := mem.New()
	open := func() *syncer.Syncer {
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	put := func(s *syncer.Syncer, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(s.Root(), "x"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b := open(), open()
	put(a, "base")
	if _, err := a.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	put(a, "from a")
	if _, err := a.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	put(b, "from b")
	st, err := b.Pull(t.Context(), syncer.PullOptions{})
	if err != nil || st.Files.Conflicts != 1 {
		t.Fatalf("pull: %v, %d conflicts; want one", err, st.Files.Conflicts)
	}
	status, err := b.Status(t.Context(), false)
	if err != nil || len(status.Conflicts) != 1 || status.Conflicts[0].Path != "x" || status.Conflicts[0].Seq != 2 {
		t.Fatalf("status conflicts %+v (%v), want x at seq 2", status.Conflicts, err)
	}
	if _, err := b.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"x"}, Keep: syncer.KeepLocal}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Push(t.Context(), syncer.PushOptions{}); err != nil || st.Files.Uploaded != 1 || st.Files.Conflicts != 0 {
		t.Fatalf("push after keep-local: %v, %+v", err, st.Files)
	}
	if status, _ := b.Status(t.Context(), false); len(status.Conflicts) != 0 {
		t.Errorf("conflicts remembered after resolving: %+v", status.Conflicts)
	}
	if _, err := a.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(a.Root(), "x")); string(got) != "from b" {
		t.Errorf("a has %q, want b's copy", got)
	}
	if _, err := b.Resolve(t.Context(), syncer.ResolveOptions{All: true}); err == nil {
		t.Error("Resolve without a choice succeeded, want ErrNoResolution")
	}
}
