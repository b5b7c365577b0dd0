package syncer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
)

// SeenSeq is Status's SeenSeq, read without the scan of every record
// (serve.New reads it at start; the scan cost a second at a million
// files).
func TestSyncer_SeenSeq_EqualsStatus(t *testing.T) {
	s := newFilesBucket(t, map[string]string{"a": "a\n", "b/c": "c\n"})
	if got := s.SeenSeq(); got != 0 {
		t.Errorf("SeenSeq of a new cache = %d, want 0", got)
	}
	if _, err := s.Pull(t.Context(), PullOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if st.SeenSeq == 0 || s.SeenSeq() != st.SeenSeq {
		t.Errorf("SeenSeq = %d, Status.SeenSeq = %d, want equal and not 0", s.SeenSeq(), st.SeenSeq)
	}
}

// newFilesBucket commits files (path -> body) to a fresh mem bucket and
// returns a reader cache of it that pulls one file at a time, in path
// order, so a hook can act between two installs of one batch.
func newFilesBucket(t *testing.T, files map[string]string) *Syncer {
	t.Helper()
	r, err := Open(context.Background(), Config{Backend: commitFiles(t, files), Dir: t.TempDir(), Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// commitFiles commits files (path -> body) to a fresh mem bucket, from a
// writer cache it closes, and returns the bucket.
func commitFiles(t *testing.T, files map[string]string) backend.Backend {
	t.Helper()
	ctx := context.Background()
	b, err := backend.Open(ctx, "mem://"+strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	w, err := Open(ctx, Config{Backend: b, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for p, body := range files {
		abs := filepath.Join(w.Root(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := w.MarkDirty(p); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := w.Push(ctx, PushOptions{}); err != nil || st.Files.Uploaded != len(files) {
		t.Fatalf("push: %+v, %v", st.Files, err)
	}
	return b
}

// mustHold fails t for every file of files s does not hold as given.
func mustHold(t *testing.T, s *Syncer, files map[string]string) {
	t.Helper()
	for p, want := range files {
		if got, _ := readLocal(t, s, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

func readLocal(t *testing.T, s *Syncer, p string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Root(), filepath.FromSlash(p)))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}
