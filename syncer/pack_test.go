package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

func packFiles(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("data/m/f%02d", i)] = strings.Repeat(fmt.Sprintf("%02d", i), 512)
	}
	return files
}

// ownFrame makes p of files large enough to be a frame of its own in its
// pack (index.FrameGroup), still below the pack threshold, so damage to
// it is damage to it alone.
func ownFrame(files map[string]string, p string) map[string]string {
	files[p] = strings.Repeat(p[len(p)-2:], index.FrameGroup)
	return files
}

func pushFiles(t *testing.T, c *syncer.Syncer, files map[string]string) syncer.Stats {
	t.Helper()
	for p, content := range files {
		writeFile(t, c, p, content)
	}
	if err := c.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	st, err := c.Push(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSyncer_Push_SmallFiles_OnePackAndRangedPull(t *testing.T) {
	store := mem.New()
	w := openCache(t, store)
	files := packFiles(10)
	st := pushFiles(t, w, files)
	// The bucket's first push creates it (the marker, the genesis hint).
	if st.Requests.Put != 5 || st.Files.Uploaded != 10 {
		t.Errorf("push of 10 small files: %+v requests, %d uploaded; want 5 puts (marker, genesis, pack, shard, log entry)", st.Requests, st.Files.Uploaded)
	}
	snap, err := index.OpenSnapshot(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	packs := map[string]bool{}
	err = snap.Walk(t.Context(), "", func(p string, e index.Entry) error { packs[e.Pack] = true; return nil })
	if err != nil || len(packs) != 1 || packs[""] {
		t.Fatalf("packs named by entries: %v (%v), want one", packs, err)
	}
	if _, err := snap.Check(t.Context(), true); err != nil {
		t.Errorf("check --data: %v", err)
	}
	c := wrap.Count(store)
	r := openCache(t, c)
	pst, err := r.Pull(t.Context(), syncer.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pst.Files.Downloaded != 10 || pst.Requests.Get != 4 || pst.Requests.List != 1 {
		t.Errorf("cold pull: %d downloaded, %d gets, %d lists; want 10, 4 and 1 (hint, the listing of the log's block, entry 1, shard, one ranged read)", pst.Files.Downloaded, pst.Requests.Get, pst.Requests.List)
	}
	for p, content := range files {
		if got := readFile(t, r, p); got != content {
			t.Errorf("%s: %q", p, got)
		}
	}
}

func TestSyncer_Pull_CorruptPackMember_ReportedOthersInstalled(t *testing.T) {
	store := mem.New()
	pushFiles(t, openCache(t, store), ownFrame(packFiles(4), "data/m/f01"))
	snap, err := index.OpenSnapshot(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := snap.Lookup(t.Context(), "data/m/f01")
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := backend.ReadAll(t.Context(), store, index.PackKey(e.Pack), backend.GetOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data[e.Off] ^= 1 // flip one byte of f01
	if _, err := backend.PutBytes(t.Context(), store, index.PackKey(e.Pack), data, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	r := openCache(t, store)
	st, err := r.Pull(t.Context(), syncer.PullOptions{})
	if !errors.Is(err, index.ErrCorruptObject) || !strings.Contains(err.Error(), "data/m/f01") {
		t.Fatalf("pull of a corrupt member: %v, want ErrCorruptObject naming data/m/f01", err)
	}
	if st.Files.Downloaded != 3 {
		t.Errorf("downloaded %d, want the 3 intact members", st.Files.Downloaded)
	}
	if _, err := os.Stat(filepath.Join(r.Root(), "data/m/f01")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("corrupt member installed: %v", err)
	}
}

func TestSyncer_HydrateFile_Packed_OneRangedRead(t *testing.T) {
	store := mem.New()
	pushFiles(t, openCache(t, store), packFiles(4))
	c := wrap.Count(store)
	r, err := syncer.Open(t.Context(), syncer.Config{Backend: c, Dir: t.TempDir(), Lazy: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Pull(t.Context(), syncer.PullOptions{MetadataOnly: true}); err != nil {
		t.Fatal(err)
	}
	ok, st, err := r.HydrateFile(t.Context(), "data/m/f02")
	if err != nil || !ok {
		t.Fatalf("hydrate: %v %v", ok, err)
	}
	if st.Requests.Get != 1 {
		t.Errorf("hydrating a packed file: %d gets, want 1 ranged read", st.Requests.Get)
	}
	if got := readFile(t, r, "data/m/f02"); got != packFiles(4)["data/m/f02"] {
		t.Errorf("hydrated %q", got)
	}
}

// Deletes leave a pack 20% live: GC repacks its live members by a commit,
// every entry stays readable, and the old pack is swept once no snapshot
// within the grace period references it.
func TestGC_Repack_LowLiveShare_RewrittenThenSwept(t *testing.T) {
	ctx := context.Background()
	store, clock := clockedStore()
	w := checkpointingCache(t, store)
	files := packFiles(10)
	pushFiles(t, w, files)
	snap, err := index.OpenSnapshot(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := snap.Lookup(ctx, "data/m/f00")
	if err != nil {
		t.Fatal(err)
	}
	old := index.PackKey(e.Pack)
	for i := 2; i < 10; i++ {
		p := fmt.Sprintf("data/m/f%02d", i)
		if err := os.Remove(filepath.Join(w.Root(), p)); err != nil {
			t.Fatal(err)
		}
		delete(files, p)
	}
	if err := w.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	if st, err := w.Push(ctx, syncer.PushOptions{}); err != nil || st.Files.Deleted != 8 {
		t.Fatalf("delete push: %+v %v", st.Files, err)
	}
	rep, err := index.GC(ctx, store, index.GCOptions{OlderThan: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repack.Packs) != 1 || rep.Repack.Packs[0].Key != old || rep.Repack.Entries != 2 || rep.Repack.Written != 1 {
		t.Fatalf("repack: %+v, want %s rewritten with its 2 live entries", rep.Repack, old)
	}
	if len(rep.Packs) != 0 {
		t.Errorf("swept %v within the grace period", rep.Packs)
	}
	check := func() {
		t.Helper()
		snap, err := index.OpenSnapshot(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := snap.Check(ctx, true); err != nil {
			t.Errorf("check after repack: %v", err)
		}
		r := openCache(t, store)
		if _, err := r.Pull(ctx, syncer.PullOptions{}); err != nil {
			t.Fatal(err)
		}
		for p, content := range files {
			if got := readFile(t, r, p); got != content {
				t.Errorf("%s after repack: %q", p, got)
			}
		}
	}
	check()
	if _, err := w.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Errorf("pull of the writer after the repack: %v", err)
	}
	// The states before the repack's leave the log once a checkpoint at or
	// above the repack is old and below the head: one commit more.
	pushFiles(t, w, map[string]string{"data/n/after": "a commit above the repack"})
	files["data/n/after"] = "a commit above the repack"
	clock.Advance(2 * time.Hour)
	rep, err = index.GC(ctx, store, index.GCOptions{OlderThan: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Packs) != 1 || rep.Packs[0].Key != old || len(rep.Repack.Packs) != 0 {
		t.Errorf("gc past grace: swept %v, repacked %v; want %s swept", rep.Packs, rep.Repack.Packs, old)
	}
	check()
}

// A format-2 bucket is read as it is; a push to it is refused until it is
// migrated, and then commits format 6. Format 1 and formats above 6 are
// refused, changing nothing.
func TestSyncer_Pull_FormatVersions_2ReadAndWrittenOnceMigrated(t *testing.T) {
	ctx := context.Background()
	put := func(b backend.Backend, key string, data []byte) {
		t.Helper()
		if _, err := backend.PutBytes(ctx, b, key, data, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	bucket := func(format int) backend.Backend {
		b := mem.New()
		content := []byte("format two")
		sha := index.PackSHA(content) // the sha256 of the bytes, as for any object
		put(b, index.ObjectKey(sha), content)
		shard := fmt.Appendf(nil, `{"format":%d,"entries":{"data/a":{"size":%d,"sha256":"%s","seq":1}}}`, format, len(content), sha)
		id := index.ShardID(shard)
		put(b, index.ShardKey(id), shard)
		put(b, index.ManifestKey, fmt.Appendf(nil, `{"format":%d,"seq":1,"shards":[{"lo":"","id":"%s","count":1,"bytes":%d}]}`, format, id, len(shard)))
		return b
	}
	b := bucket(2)
	c := openCache(t, b)
	if _, err := c.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatalf("pull of a format-2 bucket: %v", err)
	}
	if got := readFile(t, c, "data/a"); got != "format two" {
		t.Fatalf("data/a = %q", got)
	}
	for p, content := range packFiles(3) {
		writeFile(t, c, p, content)
	}
	if err := c.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	var mr *index.MigrateRequiredError
	if _, err := c.Push(ctx, syncer.PushOptions{}); !errors.As(err, &mr) || mr.Format != 2 {
		t.Fatalf("push to a format-2 bucket: %v, want ErrMigrateRequired naming format 2", err)
	}
	if _, err := index.Migrate(ctx, b, index.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Fatalf("push after the migration: %v", err)
	}
	h, err := index.ReadHead(ctx, b, nil)
	if err != nil || h.Manifest.Format != index.DefaultFormat || h.Manifest.Entries() != 4 {
		t.Fatalf("head after a push: %+v (%v), want format %d with 4 entries", h.Manifest, err, index.DefaultFormat)
	}
	for format, want := range map[int]error{1: index.ErrOlderFormat, 7: index.ErrNewerFormat} {
		_, err := openCache(t, bucket(format)).Pull(ctx, syncer.PullOptions{})
		if !errors.Is(err, want) {
			t.Errorf("pull of a format-%d bucket: %v, want %v", format, err, want)
		}
	}
}

// A file that changes between its hashing and its packing is left out of
// the pack and stays dirty; the pack and the committed entries hold only
// bytes that match them.
func TestSyncer_Push_FileChangedBeforePacking_LeftOutAndDirty(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	dir := t.TempDir()
	changed := false
	var c *syncer.Syncer
	// Marked roots are planned one after another, each walked and hashed
	// in full, and packs are built only after planning: a file of the first
	// root rewritten while the second is checked was hashed with its old
	// bytes and must not be packed with its new ones.
	c, err := syncer.Open(ctx, syncer.Config{Backend: store, Dir: dir, ProgressChecks: true, Progress: func(p syncer.Progress) {
		if p.Phase == "check" && p.Path == "data/n/g00" && !changed {
			changed = true
			writeFile(t, c, "data/m/f01", strings.Repeat("zz", 512))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	files := packFiles(8)
	files["data/n/g00"] = strings.Repeat("g", 1024)
	for p, content := range files {
		writeFile(t, c, p, content)
	}
	for _, d := range []string{"data/m", "data/n"} {
		if err := c.MarkDirty(d); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Push(ctx, syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !changed || st.Files.Uploaded != 8 || len(st.Conflicts) != 1 || st.Conflicts[0].Path != "data/m/f01" {
		t.Fatalf("push: changed %v, uploaded %d, conflicts %+v; want 8 uploaded and data/m/f01 in conflict", changed, st.Files.Uploaded, st.Conflicts)
	}
	snap, err := index.OpenSnapshot(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := snap.Lookup(ctx, "data/m/f01"); ok {
		t.Error("data/m/f01 committed with bytes it no longer has")
	}
	if _, err := snap.Check(ctx, true); err != nil {
		t.Errorf("check --data: %v", err)
	}
	status, err := c.Status(ctx, false)
	if err != nil || !slices.ContainsFunc(status.Dirty, func(d string) bool { return d == "data" || d == "data/m" || d == "data/m/f01" }) {
		t.Errorf("data/m/f01 not marked after the push: %+v %v", status.Dirty, err)
	}
	st = pushFiles(t, c, nil)
	if st.Files.Uploaded != 1 {
		t.Errorf("next push uploaded %d, want data/m/f01", st.Files.Uploaded)
	}
}

// TestSyncer_Push_PackBuffers_AllocateTheirBytesOnce is issue 37's cold
// upload memory: a pack is read into a buffer of its exact size. A
// bytes.Buffer filled by ReadFrom doubled a full buffer for the last
// member's EOF, and a push holds several packs at once: 10k files of 5 KiB
// peaked at 261 MiB of RSS.
func TestSyncer_Push_PackBuffers_AllocateTheirBytesOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's own allocations swamp the count (44 MiB under -race)")
	}
	c := openCache(t, mem.New())
	const n, size = 256, 32 << 10 // 8 MiB of small files: one pack
	for i := range n {
		writeFile(t, c, fmt.Sprintf("data/p/f%03d", i), strings.Repeat(string(rune('a'+i%26)), size-4)+fmt.Sprintf("%04d", i))
	}
	if err := c.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := c.Push(t.Context(), syncer.PushOptions{})
	runtime.ReadMemStats(&after)
	if err != nil || st.Files.Uploaded != n {
		t.Fatalf("push: %v, %d uploaded", err, st.Files.Uploaded)
	}
	// The pack's bytes once, the mem store's io.ReadAll of them (about
	// 2x), and the rest of the push: about 26 MiB. The doubling buffer
	// added its full and its doubled copy: 42 MiB.
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(n*size)*4; got > limit {
		t.Fatalf("push of %d MiB allocated %d MiB, want at most %d MiB", n*size>>20, got>>20, limit>>20)
	}
}
