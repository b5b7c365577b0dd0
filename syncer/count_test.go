package syncer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// A file uploaded and then refused by the commit (a peer committed a
// directory of its name meanwhile) was counted as uploaded and as a
// conflict: every path must be counted once, in its final outcome.
func TestPush_Regression_UploadedThenConflictCountedOnce(t *testing.T) {
	root := t.TempDir()
	open := func(name string) *syncer.Syncer {
		b, err := backend.Open(t.Context(), "file://"+filepath.Join(root, "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: filepath.Join(root, name)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("a"), open("b")
	put := func(s *syncer.Syncer, p, body string) {
		t.Helper()
		full := filepath.Join(s.Root(), p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDirty(p); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "clash/inner.txt", "a's file under a directory")
	if _, err := a.Push(t.Context(), syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	put(b, "clash", "b's file of the directory's name")
	put(b, "other.txt", "unrelated")
	st, err := b.Push(t.Context(), syncer.PushOptions{})
	t.Logf("push: %v", err)
	if st.Files.Conflicts != 1 {
		t.Fatalf("conflicts %d, want 1 (clash): %+v", st.Files.Conflicts, st.Files)
	}
	outcomes := map[string]int{}
	for _, c := range st.Changes {
		outcomes[c.Path]++
	}
	distinct := len(outcomes)
	if got := st.Files.Uploaded + st.Files.Deduplicated + st.Files.Conflicts; got != distinct || distinct != 2 {
		t.Fatalf("uploaded %d + deduplicated %d + conflicts %d = %d, want the %d distinct paths %v",
			st.Files.Uploaded, st.Files.Deduplicated, st.Files.Conflicts, got, distinct, outcomes)
	}
	for p, n := range outcomes {
		if n != 1 {
			t.Errorf("%s has %d outcomes in Changes (%v), want 1", p, n, st.Changes)
		}
	}
}
