package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// CheckSyncerLargeFile pushes a file of size pseudo-random bytes through
// the syncer into b and pulls it into a second cache: the committed entry
// must carry the file's true size and sha256, and the pulled bytes must
// equal it. Backends that split large objects (S3 multipart) run it with a
// size above their threshold, so a part the store re-reads can never skew
// the committed hash.
func CheckSyncerLargeFile(t *testing.T, b backend.Backend, size int64) {
	t.Helper()
	ctx := context.Background()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	open := func() *syncer.Syncer {
		s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: t.TempDir(), Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	w := open()
	if err := os.MkdirAll(filepath.Join(w.Root(), "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Root(), "data", "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkDirty("data/big"); err != nil {
		t.Fatal(err)
	}
	st, err := w.Push(ctx, syncer.PushOptions{})
	if err != nil || st.Files.Uploaded != 1 {
		t.Fatalf("push: %+v, %v", st.Files, err)
	}
	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := snap.Lookup(ctx, "data/big")
	if err != nil || !ok || e.SHA256 != want || e.Size != size {
		t.Fatalf("committed entry %+v (%v, %v), want size %d sha256 %s", e, ok, err, size, want)
	}
	rd := open()
	if _, err := rd.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(rd.Root(), "data", "big"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("pulled %d bytes (%v), want the %d pushed", len(got), err, size)
	}
	if _, err := snap.Check(ctx, true); err != nil {
		t.Fatal(err)
	}
}
