package fs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
)

// holdTemp makes a temp file as a live writer would: locked by a
// descriptor the test keeps open.
func holdTemp(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

// A temp file nobody holds belongs to a writer that is gone, however
// young it is; one whose lock is held is a live writer's.
func TestNew_SweepsAbandonedTempFiles(t *testing.T) {
	_, dir := newBackend(t)
	tmp := filepath.Join(dir, fs.Reserved, "tmp")
	abandoned, live := filepath.Join(tmp, "put-1-crashed"), filepath.Join(tmp, "put-2-live")
	if err := os.WriteFile(abandoned, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	holdTemp(t, live)
	if _, err := fs.New(dir); err != nil {
		t.Fatal(err)
	}
	if got := tempFiles(t, dir); !slices.Equal(got, []string{"put-2-live"}) {
		t.Errorf("temp files after New = %q, want only the live writer's", got)
	}
}

// TestBackend_Regression_TempFilesStay24h: the temp file of a killed
// upload stayed 24 h (13 files, 3.4 MB after 12 killed pushes). A write of
// a long-lived Backend now removes it at its next sweep.
func TestBackend_Regression_TempFilesStay24h(t *testing.T) {
	defer fs.SetSweepEvery(0)()
	b, dir := newBackend(t)
	abandoned := filepath.Join(dir, fs.Reserved, "tmp", "put-99-killed")
	if err := os.WriteFile(abandoned, []byte("partial upload"), 0o666); err != nil {
		t.Fatal(err)
	}
	holdTemp(t, filepath.Join(dir, fs.Reserved, "tmp", "put-98-live"))
	put(t, b, "k", "v")
	if got := tempFiles(t, dir); !slices.Equal(got, []string{"put-98-live"}) {
		t.Errorf("temp files after a Put = %q, want only the live writer's", got)
	}
}

// A Put's own temp file is locked while it is staged, so a concurrent
// sweep (another Backend on the same directory) never takes it.
func TestBackend_Put_ConcurrentSweepsKeepLiveTemps(t *testing.T) {
	defer fs.SetSweepEvery(0)()
	b1, dir := newBackend(t)
	b2, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, b := range []backend.Backend{b1, b2} {
		go func() {
			var err error
			for i := range 100 {
				if _, err = backend.PutBytes(t.Context(), b, "k", []byte{byte(i)}, backend.Cond{}); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("Put beside a sweeping writer: %v", err)
		}
	}
	if got := tempFiles(t, dir); len(got) != 0 {
		t.Errorf("temp files left = %q", got)
	}
}

// TestBackend_Put_KilledWriterTempRemovedAtNextWrite kills a child process
// in the middle of an upload (its body never ends) and checks that the
// next write removes its temp file.
func TestBackend_Put_KilledWriterTempRemovedAtNextWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	defer fs.SetSweepEvery(0)()
	b, dir := newBackend(t)
	c := startChild(t, "stall", dir)
	c.expect(t, "staging")
	if got := tempFiles(t, dir); len(got) != 1 {
		t.Fatalf("temp files while the child uploads = %q, want its one", got)
	}
	put(t, b, "other", "v") // the child is alive: its temp stays
	if got := tempFiles(t, dir); len(got) != 1 {
		t.Fatalf("a sweep removed a live writer's temp file: left %q", got)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	put(t, b, "after", "v")
	if got := tempFiles(t, dir); len(got) != 0 {
		t.Errorf("temp files after the writer was killed and another wrote = %q", got)
	}
}

// stallReader yields some bytes, says so, then blocks forever.
type stallReader struct{ said bool }

func (r *stallReader) Read(p []byte) (int, error) {
	if !r.said {
		r.said = true
		return copy(p, "partial"), nil
	}
	os.Stdout.WriteString("staging\n")
	select {}
}

func (r *stallReader) Seek(int64, int) (int64, error) { return 0, errors.New("not seekable") }
