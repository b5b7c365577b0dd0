package syncer_test

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/frame"
	"github.com/siltsync/silt/syncer"
)

// Small packed files share zstd frames (one here); a file of
// index.FrameGroup bytes or more is a frame of its own, stored plain
// behind the header when zstd saves nothing (random bytes); every entry
// names its frame and its place in it, and hydrating one file reads
// exactly its frame.
func TestPack_MembersAreFrames_OneReadReadsOneFrame(t *testing.T) {
	store := mem.New()
	files := packFiles(4)
	random := make([]byte, index.FrameGroup+3000)
	rand.Read(random)
	files["data/m/random"] = string(random)
	pushFiles(t, openCache(t, store), files)
	snap, err := index.OpenSnapshot(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]index.Entry{}
	if err := snap.Walk(t.Context(), "", func(p string, e index.Entry) error { entries[p] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	e := entries["data/m/random"]
	pack, _, err := backend.ReadAll(t.Context(), store, index.PackKey(e.Pack), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	small := entries["data/m/f00"]
	for p, e := range entries {
		h, err := frame.ParseHeader(pack[e.Off:])
		switch {
		case err != nil || !e.Framed() || e.In+e.Size > e.ZN:
			t.Errorf("%s: entry %+v, header %v", p, e, err)
		case p == "data/m/random" && (h.Codec != frame.Plain || e.Z != e.Size+frame.HeaderLen || e.In != 0):
			t.Errorf("%s: random bytes stored %s in %d bytes at %d, want plain in %d at 0", p, h.Codec, e.Z, e.In, e.Size+frame.HeaderLen)
		case p != "data/m/random" && (h.Codec != frame.Zstd || e.Off != small.Off || e.ZN != 4*1024 || e.Z*4 > e.ZN):
			t.Errorf("%s: text in frame at %d (%s, %d of %d bytes), want the one zstd frame of the 4 small files at %d, under a quarter", p, e.Off, h.Codec, e.Z, e.ZN, small.Off)
		}
	}
	c := wrap.Count(store)
	r, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: t.TempDir(), Lazy: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Pull(t.Context(), syncer.PullOptions{MetadataOnly: true}); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if ok, _, err := r.HydrateFile(t.Context(), "data/m/f02"); err != nil || !ok {
		t.Fatalf("hydrate: %v %v", ok, err)
	}
	if got := c.Counts(); got.Get != 1 || got.BytesDown != entries["data/m/f02"].Z {
		t.Errorf("hydrate read %d bytes in %d gets, want the frame's %d in 1", got.BytesDown, got.Get, entries["data/m/f02"].Z)
	}
	if got := readFile(t, r, "data/m/f02"); got != files["data/m/f02"] {
		t.Errorf("hydrated %q", got)
	}
}

// A byte flipped inside a member's zstd payload (its header intact) fails
// zstd's checksum: the member is ErrCorruptObject naming its path and is
// not installed; the others are.
func TestPack_CorruptZstdPayload_ReportedNotInstalled(t *testing.T) {
	store := mem.New()
	pushFiles(t, openCache(t, store), ownFrame(packFiles(4), "data/m/f01"))
	snap, err := index.OpenSnapshot(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := snap.Lookup(t.Context(), "data/m/f01")
	if err != nil || !e.Framed() {
		t.Fatalf("entry %+v, %v", e, err)
	}
	data, _, err := backend.ReadAll(t.Context(), store, index.PackKey(e.Pack), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data[e.Off+e.Z/2] ^= 0x40
	if _, err := backend.PutBytes(t.Context(), store, index.PackKey(e.Pack), data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	r := openCache(t, store)
	st, err := r.Pull(t.Context(), syncer.PullOptions{})
	if !errors.Is(err, index.ErrCorruptObject) || !strings.Contains(err.Error(), "data/m/f01") {
		t.Fatalf("pull of a corrupt frame: %v, want ErrCorruptObject naming data/m/f01", err)
	}
	if st.Files.Downloaded != 3 {
		t.Errorf("downloaded %d, want the 3 intact members", st.Files.Downloaded)
	}
	if _, err := os.Stat(filepath.Join(r.Root(), "data/m/f01")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("corrupt member installed: %v", err)
	}
	if _, err := snap.Check(t.Context(), true); !errors.Is(err, index.ErrCorruptObject) {
		t.Errorf("check --data: %v, want ErrCorruptObject", err)
	}
}
