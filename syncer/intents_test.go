package syncer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/localhook"
)

// intentCaches returns a bucket holding a.txt (body) pushed from one cache,
// and the directory of a second cache, opened once and closed, that never
// pulled it.
func intentCaches(t *testing.T, body string) (backend.Backend, string) {
	t.Helper()
	return commitFiles(t, map[string]string{"a.txt": body}), t.TempDir()
}

// crashAfterRename leaves in dir what a pull killed between the rename of
// a.txt and its syncfs leaves: the intent to install want, and at the
// path the bytes on disk (on).
func crashAfterRename(t *testing.T, b backend.Backend, dir, want, on string) {
	t.Helper()
	s, err := Open(context.Background(), Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(want))
	if err := s.st.update(func(t stx) error {
		return t.putIntents(map[string]intent{"a.txt": {SHA256: hex.EncodeToString(sum[:])}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root(), "a.txt"), []byte(on), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func leftIntents(t *testing.T, s *Syncer) map[string]intent {
	t.Helper()
	var in map[string]intent
	if err := s.st.view(func(t stx) (err error) { in, err = t.intents(); return err }); err != nil {
		t.Fatal(err)
	}
	return in
}

// (a) A crash left a renamed file whose bytes never reached the disk
// (torn): the next Open moves it aside, the push uploads nothing for it,
// and the next pull installs the right bytes.
func TestSyncer_Intent_TornFile_NotPushed_Redownloaded(t *testing.T) {
	const body = "the committed bytes of a.txt\n"
	b, dir := intentCaches(t, body)
	crashAfterRename(t, b, dir, body, body[:7]) // torn: a prefix
	ctx := context.Background()
	s, err := Open(ctx, Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if in := leftIntents(t, s); len(in) != 0 {
		t.Errorf("intents after Open: %v, want none", in)
	}
	// The worst case: something (a watcher seeing the rename) marked it.
	if err := s.MarkDirty("a.txt"); err != nil {
		t.Fatal(err)
	}
	push, err := s.Push(ctx, PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if push.Files.Uploaded != 0 || push.Counts.Put+push.Counts.CondPut != 0 {
		t.Errorf("push after the crash: %+v, %+v; want nothing uploaded", push.Files, push.Counts)
	}
	pull, err := s.Pull(ctx, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(s.Root(), "a.txt"))
	if err != nil || string(got) != body || pull.Files.Downloaded != 1 || pull.Files.Conflicts != 0 {
		t.Errorf("pull after the crash: a.txt = %q (%v), %+v; want %q downloaded", got, err, pull.Files, body)
	}
	bs, err := s.backups()
	if err != nil || len(bs) != 1 || bs[0].Path != "a.txt" {
		t.Fatalf("backups: %+v, %v; want the torn copy of a.txt", bs, err)
	}
	if kept, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(bs[0].Copy))); err != nil || string(kept) != body[:7] {
		t.Errorf("kept copy = %q, %v; want the torn bytes", kept, err)
	}
}

// (b) A crash left a renamed file holding the right bytes: the next Open
// records it as the pull would have, and the next pull downloads nothing.
func TestSyncer_Intent_RightBytes_AdoptedWithoutDownload(t *testing.T) {
	const body = "the committed bytes of a.txt\n"
	b, dir := intentCaches(t, body)
	crashAfterRename(t, b, dir, body, body)
	ctx := context.Background()
	s, err := Open(ctx, Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if in := leftIntents(t, s); len(in) != 0 {
		t.Errorf("intents after Open: %v, want none", in)
	}
	var rec fileRecord
	var ok bool
	_ = s.st.view(func(t stx) error { rec, ok = t.file("a.txt"); return nil })
	if !ok || !rec.Hydrated || rec.Size != int64(len(body)) {
		t.Errorf("record after Open: %+v (%v); want a.txt recorded", rec, ok)
	}
	pull, err := s.Pull(ctx, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pull.Files.Downloaded != 0 || pull.Files.Conflicts != 0 || pull.Bytes.Down != 0 {
		t.Errorf("pull after Open: %+v, %d bytes down; want no download", pull.Files, pull.Bytes.Down)
	}
	if bs, _ := s.backups(); len(bs) != 0 {
		t.Errorf("backups: %+v, want none", bs)
	}
}

// (c) A pull that ends normally leaves no install intent behind.
func TestSyncer_Intent_GoneAfterPull(t *testing.T) {
	const body = "the committed bytes of a.txt\n"
	b, dir := intentCaches(t, body)
	ctx := context.Background()
	s, err := Open(ctx, Config{Backend: b, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seen map[string]intent
	defer localhook.Set(s.Root(), func(p string, st localhook.Stage) {
		if st == localhook.BeforeRename {
			seen = leftIntents(t, s)
		}
	})()
	pull, err := s.Pull(ctx, PullOptions{})
	if err != nil || pull.Files.Downloaded != 1 {
		t.Fatalf("pull: %+v, %v", pull.Files, err)
	}
	if _, ok := seen["a.txt"]; !ok {
		t.Errorf("intents while the pull installed: %v, want a.txt", seen)
	}
	if in := leftIntents(t, s); len(in) != 0 {
		t.Errorf("intents after the pull: %v, want none", in)
	}
}
