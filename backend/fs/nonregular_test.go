package fs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
)

// TestBackend_Regression_NonRegularManifestReadAsAbsent: a manifest that
// was a FIFO or a directory read as absent, so silt took a bucket with
// history for a fresh one. A key that is a pipe, a device or an empty
// directory is now an error naming what it is; only a directory holding
// other keys is absent (it is their prefix, as in an object store).
func TestBackend_Regression_NonRegularManifestReadAsAbsent(t *testing.T) {
	b, dir := newBackend(t)
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, ".silt"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, ".silt", "fifo.json"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".silt", "empty.json"), 0o777); err != nil {
		t.Fatal(err)
	}
	put(t, b, ".silt/parent.json/below", "x")
	for key, want := range map[string]string{".silt/fifo.json": "named pipe", ".silt/empty.json": "empty directory"} {
		_, _, gerr := b.Get(ctx, key, backend.GetOptions{})
		_, serr := b.Stat(ctx, key)
		for op, err := range map[string]error{"Get": gerr, "Stat": serr} {
			var be *backend.Error
			if !errors.Is(err, fs.ErrNotRegular) || backend.IsNotExist(err) || !errors.As(err, &be) {
				t.Errorf("%s %q = %v, want a *backend.Error matching fs.ErrNotRegular, not ErrNotExist", op, key, err)
			} else if !strings.Contains(err.Error(), want) {
				t.Errorf("%s %q = %q, want it to say %q", op, key, err, want)
			}
		}
	}
	if _, _, err := b.Get(ctx, ".silt/parent.json", backend.GetOptions{}); !backend.IsNotExist(err) {
		t.Errorf("Get of a key that only prefixes others = %v, want ErrNotExist", err)
	}
}
