package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// GCLoadEnv runs TestGC_UnderLoad for the duration it holds (e.g. "2m").
const GCLoadEnv = "SILT_GC_LOAD"

// gcLoadGrace is the short grace period of the gc under load.
const gcLoadGrace = 4 * time.Second

// TestGC_UnderLoad runs gc every few seconds with a short grace period
// beside writers that push about once a second (every third push restores
// an older version, whose objects and pack are likely unreferenced and past
// the grace), a reader pulling everything and a reader of older
// snapshots, on a file:// bucket opened as the command line opens it; and
// checks the current snapshot (every entry read and verified) after every
// gc. Any error is a failure.
func TestGC_UnderLoad(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(GCLoadEnv))
	if err != nil || d <= 0 {
		t.Skip("set " + GCLoadEnv + "=duration to run gc under load")
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	url := "file://" + t.TempDir()
	open := func() *syncer.Syncer {
		b, err := backend.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	store, err := backend.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var pushes, restores, gcs, repacks, checks, pulls, oldReads, failures atomic.Int64
	var mu sync.Mutex
	var errs []string
	fail := func(format string, args ...any) {
		failures.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	live := func() bool { return ctx.Err() == nil }
	var wg sync.WaitGroup
	every := func(period time.Duration, fn func(n int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(period)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					fn(n)
				}
			}
		}()
	}
	for w := range 2 {
		s := open()
		dir := fmt.Sprintf("data/w%d", w)
		// A version is a checkpoint directory of four small files (one
		// pack, f0 changing every fourth version only) and one larger
		// file (an object).
		version := func(v int) map[string]string {
			files := map[string]string{dir + "/big": fmt.Sprintf("w%d v%d ", w, v) + strings.Repeat("b", 2<<20)}
			for i := range 4 {
				at := v
				if i == 0 {
					at = v / 4 // changes less often: the packs it stays in go under half live, and gc repacks them
				}
				files[fmt.Sprintf("%s/ckpt/f%d", dir, i)] = fmt.Sprintf("w%d v%d f%d %s", w, at, i, strings.Repeat("s", 3000))
			}
			return files
		}
		every(time.Second, func(n int) {
			v := n
			if n%3 == 2 && n >= 6 {
				v = n % 5 // an old version back: its data is likely garbage past the grace
				restores.Add(1)
			}
			for p, c := range version(v) {
				full := filepath.Join(s.Root(), filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Error(err)
					return
				}
				if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
			if err := s.MarkDirty(dir); err != nil {
				fail("mark: %v", err)
				return
			}
			st, err := s.Push(ctx, syncer.PushOptions{})
			switch {
			case err != nil && live():
				fail("push w%d v%d: %v", w, v, err)
			case err == nil && st.Files.Conflicts > 0:
				fail("push w%d v%d: conflicts %v", w, v, st.Conflicts)
			case err == nil:
				pushes.Add(1)
			}
		})
	}
	reader := open()
	every(700*time.Millisecond, func(int) {
		if _, err := reader.Pull(ctx, syncer.PullOptions{}); err != nil && live() {
			fail("pull: %v", err)
			return
		}
		pulls.Add(1)
	})
	// The old-snapshot reader reads snapshots superseded within half the
	// grace period, and must be done within the other half.
	every(time.Second, func(int) {
		log, err := index.Log(ctx, store)
		if err != nil {
			if live() {
				fail("log: %v", err)
			}
			return
		}
		for _, e := range log {
			if e.Current || time.Since(e.Superseded) > gcLoadGrace/2 {
				continue
			}
			snap, err := index.OpenSnapshotAt(ctx, store, e.Seq)
			if err == nil {
				err = snap.Walk(ctx, "", func(p string, en index.Entry) error {
					rc, err := index.Open(ctx, store, p, en)
					if err != nil {
						return err
					}
					defer rc.Close()
					_, err = io.Copy(io.Discard, rc)
					return err
				})
			}
			if err != nil && live() {
				fail("read seq %d superseded %v ago: %v", e.Seq, time.Since(e.Superseded).Round(time.Millisecond), err)
			}
			oldReads.Add(1)
			break
		}
	})
	every(3*time.Second, func(int) {
		rep, err := index.GC(ctx, store, index.GCOptions{OlderThan: gcLoadGrace})
		if err != nil {
			if live() {
				fail("gc: %v", err)
			}
			return
		}
		gcs.Add(1)
		if rep.Repack.Seq != 0 {
			repacks.Add(1)
		}
		snap, err := index.OpenSnapshot(ctx, store)
		if err == nil {
			_, err = snap.Check(ctx, true)
		}
		if err != nil && live() {
			fail("check after gc: %v", err)
			return
		}
		checks.Add(1)
	})
	wg.Wait()
	t.Logf("gc under load, %v on file://, grace %v: %d pushes (%d restoring an older version), %d gc runs, %d repacks, %d checks after gc, %d pulls, %d old-snapshot reads, %d failures",
		d, gcLoadGrace, pushes.Load(), restores.Load(), gcs.Load(), repacks.Load(), checks.Load(), pulls.Load(), oldReads.Load(), failures.Load())
	for _, e := range errs {
		t.Error(e)
	}
}
