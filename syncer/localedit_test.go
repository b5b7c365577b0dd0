package syncer_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

// LocalEditScaleEnv runs TestSyncer_Pull_ConcurrentAppends_NoneLost at the
// issue's scale: 5 trials of 2,000 changed files, 200 of them appended to,
// about 1,000 appends in all (".ci/run" sets it).
const localEditScaleEnv = "SILT_LOCALEDIT_LARGE"

// A pull of many changed files while the user appends lines to some of
// them: every append that returned is in its file or in the copy a
// conflict kept (issue 19: main lost 568 of 1,000). The appender is paced
// by the pull's own progress (one append per completed download), so the
// appends spread over the pull without a sleep.
func TestSyncer_Pull_ConcurrentAppends_NoneLost(t *testing.T) {
	trials, files, edited, every := 1, 300, 30, 2
	if os.Getenv(localEditScaleEnv) != "" {
		trials, files, edited, every = 5, 2000, 200, 9
	}
	var made, inPlace, inCopy, lost int
	for trial := range trials {
		m, p, c, l := pullWithAppends(t, trial, files, edited, every)
		made, inPlace, inCopy, lost = made+m, inPlace+p, inCopy+c, lost+l
	}
	t.Logf("%d trials of %d changed files (%d appended to): %d appends returned, %d in place, %d in conflict copies, %d lost",
		trials, files, edited, made, inPlace, inCopy, lost)
	if lost != 0 {
		t.Errorf("%d of %d appends lost", lost, made)
	}
	if made == 0 {
		t.Error("no append ran during the pull")
	}
}

type appended struct{ path, line string }

func pullWithAppends(t *testing.T, trial, files, edited, every int) (made, inPlace, inCopy, lost int) {
	ctx := t.Context()
	store, err := backend.Open(ctx, "file://"+filepath.ToSlash(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	open := func(cfg syncer.Config) *syncer.Syncer {
		cfg.Backend, cfg.Dir = store, t.TempDir()
		s, err := syncer.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	paths := make([]string, files)
	for i := range paths {
		paths[i] = fmt.Sprintf("data/m%02d/f%04d", i%20, i)
	}
	writeAll := func(s *syncer.Syncer, version string) {
		for i, p := range paths {
			abs := filepath.Join(s.Root(), filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				t.Fatal(err)
			}
			body := fmt.Sprintf("%s %s\n", version, p)
			if i%7 == 0 {
				body += strings.Repeat("y", 64<<10) // some plain objects among the packed
			}
			if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.MarkDirty("data"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Push(ctx, syncer.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a := open(syncer.Config{PackThreshold: 32 << 10})
	writeAll(a, "v1")
	tick := make(chan struct{}, files)
	n, armed := 0, false
	b := open(syncer.Config{OnChange: func(c syncer.Change) {
		if armed && c.Action == syncer.ActionDownload {
			if n++; n%every == 0 {
				select {
				case tick <- struct{}{}:
				default:
				}
			}
		}
	}})
	if _, err := b.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	writeAll(a, "v2")

	rng := rand.New(rand.NewPCG(uint64(trial), 19))
	targets := make([]string, edited)
	for i := range targets {
		targets[i] = paths[rng.IntN(files)]
	}
	var mu sync.Mutex
	var appends []appended
	var wg sync.WaitGroup
	wg.Go(func() {
		for range tick {
			p := targets[rng.IntN(len(targets))]
			line := fmt.Sprintf("edit %d of trial %d\n", len(appends), trial)
			f, err := os.OpenFile(filepath.Join(b.Root(), filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				continue // mid-install the path may be briefly absent: no append made
			}
			_, err = f.WriteString(line)
			if cerr := f.Close(); err == nil && cerr == nil {
				mu.Lock()
				appends = append(appends, appended{p, line})
				mu.Unlock()
			}
		}
	})
	armed = true
	st, err := b.Pull(ctx, syncer.PullOptions{})
	close(tick)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	status, err := b.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	copies := map[string][]string{}
	for _, c := range status.Conflicts {
		if c.Copy != "" {
			copies[c.Path] = append(copies[c.Path], c.Copy)
		}
	}
	for _, bk := range status.Backups {
		copies[bk.Path] = append(copies[bk.Path], bk.Copy)
	}
	cache := map[string][]byte{}
	read := func(name string) []byte {
		if data, ok := cache[name]; ok {
			return data
		}
		data, _ := os.ReadFile(name)
		cache[name] = data
		return data
	}
	for _, ap := range appends {
		switch {
		case bytes.Contains(read(filepath.Join(b.Root(), filepath.FromSlash(ap.path))), []byte(ap.line)):
			inPlace++
		case func() bool {
			for _, c := range copies[ap.path] {
				if bytes.Contains(read(filepath.Join(b.Root(), filepath.FromSlash(c))), []byte(ap.line)) {
					return true
				}
			}
			return false
		}():
			inCopy++
		default:
			lost++
			t.Errorf("trial %d: the append %q to %s returned but is gone", trial, strings.TrimSpace(ap.line), ap.path)
		}
	}
	t.Logf("trial %d: %d downloads, %d conflicts, %d appends: %d in place, %d in copies, %d lost",
		trial, st.Files.Downloaded, st.Files.Conflicts, len(appends), inPlace, inCopy, lost)
	return len(appends), inPlace, inCopy, lost
}
