package fs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
)

func newBackend(t *testing.T) (backend.Backend, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dir
}

func put(t *testing.T, b backend.Backend, key, data string) backend.ObjectInfo {
	t.Helper()
	info, err := backend.PutBytes(context.Background(), b, key, []byte(data), backend.Cond{})
	if err != nil {
		t.Fatalf("Put %q: %v", key, err)
	}
	return info
}

func get(t *testing.T, b backend.Backend, key string) (string, backend.ObjectInfo) {
	t.Helper()
	data, info, err := backend.ReadAll(context.Background(), b, key, backend.GetOptions{}, 0)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	return string(data), info
}

func listKeys(t *testing.T, b backend.Backend, prefix string, pageSize int) []string {
	t.Helper()
	var keys []string
	err := b.List(context.Background(), prefix, backend.ListOptions{PageSize: pageSize}, func(page []backend.ObjectInfo) error {
		if pageSize > 0 && len(page) > pageSize {
			t.Errorf("page of %d objects, PageSize %d", len(page), pageSize)
		}
		for _, o := range page {
			if o.Version == "" {
				t.Errorf("List: %q has no version", o.Key)
			}
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("List %q: %v", prefix, err)
	}
	return keys
}

func sha(data string) backend.Version {
	sum := sha256.Sum256([]byte(data))
	return backend.Version(hex.EncodeToString(sum[:]))
}

// tempFiles lists what writes in progress left behind.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, fs.Reserved, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestBackend_Put_VersionIsContentHash(t *testing.T) {
	b, dir := newBackend(t)
	info := put(t, b, "a/b/c", "hello")
	if info.Version != sha("hello") || info.Size != 5 {
		t.Errorf("Put info = %+v, want size 5 and version %s", info, sha("hello"))
	}
	if data, err := os.ReadFile(filepath.Join(dir, "a", "b", "c")); err != nil || string(data) != "hello" {
		t.Errorf("file a/b/c = %q, %v; want the object's bytes at its key's path", data, err)
	}
	// Same size, new bytes, again and again: a reused inode must never
	// bring back a stale cached hash.
	for i := range 50 {
		data := strings.Repeat(string(rune('a'+i%26)), 8)
		put(t, b, "same-size", data)
		st, err := b.Stat(context.Background(), "same-size")
		if err != nil || st.Version != sha(data) {
			t.Fatalf("Stat after Put %q = %+v, %v; want version %s", data, st, err, sha(data))
		}
	}
}

func TestBackend_Get_ReaderIsSnapshot(t *testing.T) {
	b, _ := newBackend(t)
	put(t, b, "k", "old bytes")
	rc, info, err := b.Get(context.Background(), "k", backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	put(t, b, "k", "new bytes, longer")
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "old bytes" || info.Version != sha("old bytes") || info.Size != 9 {
		t.Errorf("Get yielded %q with %+v; want the bytes and version of the object when Get ran", data, info)
	}
}

// cancelAfterFirstRead cancels its context once some bytes have gone out,
// as a caller abandoning an upload would.
type cancelAfterFirstRead struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c *cancelAfterFirstRead) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:min(len(p), 3)])
	c.cancel()
	return n, err
}

func (c *cancelAfterFirstRead) Seek(int64, int) (int64, error) { return 0, errors.New("not seekable") }

func TestBackend_Put_CancelledLeavesNoTempFile(t *testing.T) {
	b, dir := newBackend(t)
	put(t, b, "k", "old")
	for _, cond := range []backend.Cond{{}, {IfMatch: sha("old")}, {IfAbsent: true}} {
		key := "k"
		if cond.IfAbsent {
			key = "fresh"
		}
		ctx, cancel := context.WithCancel(context.Background())
		body := &cancelAfterFirstRead{r: strings.NewReader("new content"), cancel: cancel}
		if _, err := b.Put(ctx, key, body, 11, cond); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Put %q %+v: err = %v, want context.Canceled", key, cond, err)
		}
		if left := tempFiles(t, dir); len(left) != 0 {
			t.Errorf("cancelled Put left temp files %v", left)
		}
	}
	if data, _ := get(t, b, "k"); data != "old" {
		t.Errorf("after cancelled Puts k = %q, want %q", data, "old")
	}
	if _, err := b.Stat(context.Background(), "fresh"); !backend.IsNotExist(err) {
		t.Errorf("cancelled IfAbsent Put: Stat fresh = %v, want ErrNotExist", err)
	}
}

func TestBackend_Put_SizeMismatch(t *testing.T) {
	b, dir := newBackend(t)
	for _, size := range []int64{4, 6} {
		_, err := b.Put(context.Background(), "k", strings.NewReader("fives"), size, backend.Cond{})
		var be *backend.Error
		if !errors.As(err, &be) || backend.IsRetryable(err) {
			t.Errorf("Put of 5 bytes with size %d: err = %v, want a permanent *backend.Error", size, err)
		}
	}
	if _, err := b.Stat(context.Background(), "k"); !backend.IsNotExist(err) {
		t.Errorf("Stat after failed Puts = %v, want ErrNotExist", err)
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Errorf("failed Puts left temp files %v", left)
	}
}

func TestBackend_Key_ReservedDirRejected(t *testing.T) {
	b, _ := newBackend(t)
	ctx := context.Background()
	for _, key := range []string{fs.Reserved, fs.Reserved + "/tmp/x", fs.Reserved + "/locks/00.lock"} {
		if _, err := backend.PutBytes(ctx, b, key, []byte("x"), backend.Cond{}); !errors.Is(err, backend.ErrInvalidKey) {
			t.Errorf("Put %q: err = %v, want ErrInvalidKey", key, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, backend.ErrInvalidKey) {
			t.Errorf("Stat %q: err = %v, want ErrInvalidKey", key, err)
		}
		if err := b.Delete(ctx, key, backend.Cond{}); !errors.Is(err, backend.ErrInvalidKey) {
			t.Errorf("Delete %q: err = %v, want ErrInvalidKey", key, err)
		}
	}
	if err := b.List(ctx, fs.Reserved+"/", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil }); !errors.Is(err, backend.ErrInvalidKey) {
		t.Errorf("List %q: err = %v, want ErrInvalidKey", fs.Reserved+"/", err)
	}
	// Only the first segment is reserved.
	put(t, b, "x/"+fs.Reserved, "fine")
	put(t, b, fs.Reserved+"-not", "fine")
}

func TestBackend_Key_SpacesAndUnicode(t *testing.T) {
	b, dir := newBackend(t)
	keys := []string{"dir with space/file name.txt", "日本語/ファイル", "é/ü ö/ñ", "emoji/🙂 smile", "sym#bols/%20&?=+"}
	for _, k := range keys {
		put(t, b, k, "data of "+k)
	}
	for _, k := range keys {
		if data, info := get(t, b, k); data != "data of "+k || info.Version != sha(data) {
			t.Errorf("Get %q = %q, %+v", k, data, info)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(k))); err != nil {
			t.Errorf("key %q is not browsable at its path: %v", k, err)
		}
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := listKeys(t, b, "", 0); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func TestBackend_Put_FileDirectoryConflict(t *testing.T) {
	b, _ := newBackend(t)
	ctx := context.Background()
	put(t, b, "a", "file")
	put(t, b, "x/y", "below x")
	for _, tc := range []struct {
		key  string
		cond backend.Cond
	}{
		{"a/b", backend.Cond{}},
		{"a/b/c", backend.Cond{IfAbsent: true}},
		{"x", backend.Cond{}},
		{"x", backend.Cond{IfAbsent: true}},
	} {
		_, err := backend.PutBytes(ctx, b, tc.key, []byte("v"), tc.cond)
		var be *backend.Error
		if !errors.As(err, &be) || backend.IsRetryable(err) || backend.IsPrecondition(err) || backend.IsNotExist(err) ||
			!strings.Contains(err.Error(), "file/directory conflict") {
			t.Errorf("Put %q %+v: err = %v, want a permanent file/directory conflict", tc.key, tc.cond, err)
		}
	}
	for _, key := range []string{"x", "a/b"} {
		if _, err := b.Stat(ctx, key); !backend.IsNotExist(err) {
			t.Errorf("Stat %q = %v, want ErrNotExist", key, err)
		}
		if _, _, err := b.Get(ctx, key, backend.GetOptions{}); !backend.IsNotExist(err) {
			t.Errorf("Get %q = %v, want ErrNotExist", key, err)
		}
		if err := b.Delete(ctx, key, backend.Cond{}); err != nil {
			t.Errorf("Delete %q = %v, want success (nothing stored)", key, err)
		}
	}
	if data, _ := get(t, b, "x/y"); data != "below x" {
		t.Errorf("x/y = %q after Delete of x", data)
	}
}

func TestBackend_Delete_PrunesEmptyDirs(t *testing.T) {
	b, dir := newBackend(t)
	ctx := context.Background()
	put(t, b, "a/b/c/d", "1")
	put(t, b, "a/keep", "2")
	if err := b.Delete(ctx, "a/b/c/d", backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b")); !os.IsNotExist(err) {
		t.Errorf("a/b still exists after its last object went: %v", err)
	}
	if err := b.Delete(ctx, "a/keep", backend.Cond{IfMatch: sha("2")}); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != 1 || des[0].Name() != fs.Reserved {
		t.Errorf("root holds %v after deleting everything, want only %s", des, fs.Reserved)
	}
	if err := b.Delete(ctx, "a/keep", backend.Cond{IfMatch: sha("2")}); !backend.IsPrecondition(err) {
		t.Errorf("IfMatch Delete of a missing key = %v, want ErrPrecondition", err)
	}
}

func TestBackend_Get_FileMadeByHand(t *testing.T) {
	b, dir := newBackend(t)
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "hand"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hand", "made.txt"), []byte("copied in"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, info := get(t, b, "hand/made.txt")
	if data != "copied in" || info.Version != sha("copied in") || info.Size != 9 || info.ModTime.IsZero() {
		t.Errorf("Get = %q, %+v", data, info)
	}
	var listed []backend.ObjectInfo
	if err := b.List(ctx, "hand/", backend.ListOptions{}, func(p []backend.ObjectInfo) error { listed = append(listed, p...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Version != info.Version || listed[0].Size != 9 {
		t.Errorf("List = %+v, want the hand-made file with version %s", listed, info.Version)
	}
	if _, err := backend.PutBytes(ctx, b, "hand/made.txt", []byte("v2"), backend.Cond{IfMatch: info.Version}); err != nil {
		t.Errorf("IfMatch Put over a hand-made file: %v", err)
	}
}

// Delete prunes a directory that another writer is about to fill; the
// writer must recreate it, not fail.
func TestBackend_Put_RacesDirectoryPruning(t *testing.T) {
	b, _ := newBackend(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, key := range []string{"d/e/x", "d/e/y", "d/z"} {
		wg.Go(func() {
			for i := range 200 {
				cond := backend.Cond{IfAbsent: i%2 == 0}
				if _, err := backend.PutBytes(ctx, b, key, []byte(key), cond); err != nil {
					t.Errorf("Put %q: %v", key, err)
					return
				}
				if err := b.Delete(ctx, key, backend.Cond{}); err != nil {
					t.Errorf("Delete %q: %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := listKeys(t, b, "", 0); len(got) != 0 {
		t.Errorf("List after everything was deleted = %q", got)
	}
}
