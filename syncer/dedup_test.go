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
	puts := map[string]int{}
	for _, r := range c.Log() {
		if (r.Verb == wrap.VerbPut || r.Verb == wrap.VerbCondPut) && strings.HasPrefix(r.Key, index.ObjectsPrefix) {
			puts[r.Key]++
		}
	}
	for k, n := range puts {
		if n != 1 {
			t.Errorf("%s uploaded %d times", k, n)
		}
	}
	if len(puts) != files-repeats || st.Files.Uploaded != files-repeats || st.Files.Deduplicated != repeats {
		t.Errorf("objects put %d, uploaded %d, deduplicated %d; want %d, %d, %d", len(puts), st.Files.Uploaded, st.Files.Deduplicated, files-repeats, files-repeats, repeats)
	}
	stored := 0
	err = store.List(ctx, index.ObjectsPrefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error { stored += len(page); return nil })
	if err != nil || stored != files-repeats {
		t.Errorf("stored %d objects (%v), want %d", stored, err, files-repeats)
	}
	snap, err := index.OpenSnapshot(ctx, store)
	if err != nil || snap.Manifest().Entries() != files {
		t.Fatalf("entries %v, %v", snap, err)
	}
}
