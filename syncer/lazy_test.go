package syncer_test

import (
	"errors"
	"path"
	"testing"

	"github.com/siltsync/silt/syncer"
)

func TestLazyGlobs_Match_DoubleStarSpansDirectories(t *testing.T) {
	lazy, err := syncer.LazyGlobs("data/**/raw", "**/*.bin")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"data/raw": true, "data/a/b/raw": true, "data/a/raw/x": false, "other/raw": false,
		"w.bin": true, "a/b/w.bin": true, "a/b/w.bin.txt": false,
	} {
		if got := lazy(p); got != want {
			t.Errorf("lazy(%q) = %v, want %v", p, got, want)
		}
	}
	if _, err := syncer.LazyGlobs("[bad"); !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("LazyGlobs([bad) error %v, want ErrBadPattern", err)
	}
}
