package syncer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// A cold push of 10,010 files of 5 KiB, 500 of which repeat another file's
// bytes, stores 9,510 objects and uploads each exactly once.
func TestSyncer_Push_ColdPushStoresEachContentOnce(t *testing.T) {
	const files, repeats, size = 10_010, 500, 5 << 10
	store := mem.New()
	c := wrap.Count(store)
	dir := t.TempDir()
	ctx := context.Background()
	s, err := syncer.Open(ctx, syncer.Config{Backend: c, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	content := func(i int) []byte {
		if i >= files-repeats {
			i -= files - repeats // a repeat of an earlier file
		}
		b := []byte(strings.Repeat(fmt.Sprintf("%08d", i), size/8))
		return b[:size]
	}
	for i := range files {
		d := filepath.Join(dir, "data", fmt.Sprintf("m%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d", i)), content(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkDirty("data"); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	st, err := s.Push(ctx, syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Small files go into packs: every pack is put once, and the packs
	// hold each distinct content once.
	puts := map[string]int{}
	for _, r := range c.Log() {
		if (r.Verb == wrap.VerbPut || r.Verb == wrap.VerbCondPut) && (strings.HasPrefix(r.Key, index.ObjectsPrefix) || strings.HasPrefix(r.Key, index.PacksPrefix)) {
			puts[r.Key]++
		}
	}
	for k, n := range puts {
		if n != 1 {
			t.Errorf("%s uploaded %d times", k, n)
		}
	}
	if st.Files.Uploaded != files-repeats || st.Files.Deduplicated != repeats {
		t.Errorf("uploaded %d, deduplicated %d; want %d, %d", st.Files.Uploaded, st.Files.Deduplicated, files-repeats, repeats)
	}
	if len(puts) > 100 {
		t.Errorf("%d data objects put for %d small files; packs should hold them", len(puts), files)
	}
	var stored int64
	for _, prefix := range []string{index.ObjectsPrefix, index.PacksPrefix} {
		err = store.List(ctx, prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
			for _, o := range page {
				stored += o.Size
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each distinct content once, compressed in the packs' frames.
	if plain := int64(files-repeats) * size; stored <= 0 || stored*4 > plain {
		t.Errorf("stored %d data bytes for %d of repetitive text, want under a quarter", stored, plain)
	}
	snap, err := index.OpenSnapshot(ctx, store)
	if err != nil || snap.Manifest().Entries() != files {
		t.Fatalf("entries %v, %v", snap, err)
	}
}
