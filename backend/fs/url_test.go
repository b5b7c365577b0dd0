package fs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend"
)

func TestOpen_URL(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "bucket")
	b, err := backend.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put(t, b, "k", "v")
	if data, err := os.ReadFile(filepath.Join(dir, "k")); err != nil || !bytes.Equal(data, []byte("v")) {
		t.Errorf("object written through the URL is %q, %v", data, err)
	}
	b2, err := backend.Open(ctx, "file://localhost"+dir+"?create=false")
	if err != nil {
		t.Fatalf("open existing dir with create=false: %v", err)
	}
	b2.Close()

	missing := filepath.Join(t.TempDir(), "missing")
	for _, bad := range []string{
		"file://" + missing + "?create=false",
		"file://" + dir + "?bogus=1",
		"file://" + dir + "?create=maybe",
		"file://example.com" + dir,
		"file://",
		"file:relative",
	} {
		if b, err := backend.Open(ctx, bad); err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded, want an error", bad)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("create=false created %s", missing)
	}
	if err := backendOpenRelative(t); err != nil {
		t.Error(err)
	}
}

// backendOpenRelative opens file://./rel from a temporary working
// directory.
func backendOpenRelative(t *testing.T) error {
	t.Chdir(t.TempDir())
	b, err := backend.Open(context.Background(), "file://./rel/bucket")
	if err != nil {
		return err
	}
	defer b.Close()
	put(t, b, "k", "v")
	_, err = os.Stat(filepath.Join("rel", "bucket", "k"))
	return err
}
