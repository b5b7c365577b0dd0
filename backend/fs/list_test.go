package fs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
)

func TestBackend_List_HidesReservedDir(t *testing.T) {
	b, dir := newBackend(t)
	put(t, b, ".silt", "a")
	put(t, b, fs.Reserved+"x", "b")
	put(t, b, "z", "c")
	// A write in progress sits in the reserved directory.
	if err := os.WriteFile(filepath.Join(dir, fs.Reserved, "tmp", "put-in-progress"), []byte("partial"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", ".", ".silt", ".silt-"} {
		got := listKeys(t, b, prefix, 0)
		for _, k := range got {
			if strings.HasPrefix(k, fs.Reserved+"/") {
				t.Errorf("List %q returned internal file %q", prefix, k)
			}
		}
	}
	if got, want := listKeys(t, b, "", 0), []string{".silt", fs.Reserved + "x", "z"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func TestBackend_List_ByteOrderAndPrefix(t *testing.T) {
	b, _ := newBackend(t)
	keys := []string{"a/b", "a-b", "a0", "a/c/d", "a/c-e", "a/c/e", "ab", "b", "a.b/c", "a/ñ", "a/z", "a/b c"}
	for _, k := range keys {
		put(t, b, k, k)
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", sorted},
		{"a", sorted[:len(sorted)-1]},
		{"a/", []string{"a/b", "a/b c", "a/c-e", "a/c/d", "a/c/e", "a/z", "a/ñ"}},
		{"a/c", []string{"a/c-e", "a/c/d", "a/c/e"}},
		{"a/c/", []string{"a/c/d", "a/c/e"}},
		{"a/b", []string{"a/b", "a/b c"}},
		{"a/b/", nil}, // a/b is a file: nothing below it
		{"missing/", nil},
		{"b", []string{"b"}},
	}
	for _, tt := range tests {
		for _, pageSize := range []int{0, 1, 2, 3} {
			if got := listKeys(t, b, tt.prefix, pageSize); !slices.Equal(got, tt.want) {
				t.Errorf("List(%q, PageSize %d) = %q, want %q", tt.prefix, pageSize, got, tt.want)
			}
		}
	}
}

func TestBackend_List_StopsOnCallbackErrorAndCancel(t *testing.T) {
	b, _ := newBackend(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, b, k, k)
	}
	stop := errors.New("stop")
	calls := 0
	err := b.List(context.Background(), "", backend.ListOptions{PageSize: 1}, func([]backend.ObjectInfo) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("List with failing fn: err = %v after %d calls, want %v after 1", err, calls, stop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = b.List(ctx, "", backend.ListOptions{PageSize: 1}, func([]backend.ObjectInfo) error { calls++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("List cancelled in fn: err = %v after %d calls, want context.Canceled after 1", err, calls)
	}
}
