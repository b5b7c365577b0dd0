package index_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
)

// betweenGetAndList runs between a reader's first Get of the manifest and
// what the reader does next: the two first commits of a format-3 bucket
// land there, as they did beside the paused migration of finding F28.
type betweenGetAndList struct {
	backend.Backend
	hook func()
}

func (b *betweenGetAndList) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	rc, info, err := b.Backend.Get(ctx, key, opts)
	if key == index.ManifestKey && b.hook != nil {
		hook := b.hook
		b.hook = nil
		hook()
	}
	return rc, info, err
}

// F28 (conformance/testdata/model-findings.md): a reader that found no
// manifest and then listed the history saw the history copy of seq 1 that
// the second commit wrote, and reported the bucket's manifest missing (run
// silt recover) though seq 2 was there all along. Commits that land
// between the two reads are a head to read, not damage.
func TestReadHead_FirstCommitsLandBetweenGetAndList_ReadsTheirHead(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	b := &betweenGetAndList{Backend: inner}
	b.hook = func() {
		for range 2 { // an older silt's first two commits
			if _, err := legacy.Push(ctx, inner, index.FormatVersion, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	h, err := index.ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		t.Fatalf("read beside the first commits: %v", err)
	}
	if h.Manifest.Seq != 2 {
		t.Fatalf("read seq %d, want 2 (the head that landed)", h.Manifest.Seq)
	}
}

// A manifest that is really gone is still reported so after the re-read.
func TestReadHead_ManifestDeleted_StillReportsItMissing(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	for range 2 {
		if _, err := legacy.Push(ctx, b, index.FormatVersion, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, index.ManifestKey, backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := index.ReadManifest(ctx, b, backend.GetOptions{}); !errors.Is(err, index.ErrManifestMissing) {
		t.Fatalf("read of a deleted manifest: %v, want ErrManifestMissing", err)
	}
}
