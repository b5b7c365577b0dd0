package watch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/fs" // file:// buckets, as the CLI opens them
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

// deadline bounds every wait on a condition: generous, since the machine
// may be shared, and never a synchronisation by itself.
const deadline = 30 * time.Second

// bucket opens a file:// bucket the way the CLI does (backend.Open).
func bucket(t *testing.T) (string, backend.Backend) {
	t.Helper()
	u := "file://" + filepath.Join(t.TempDir(), "bucket")
	b, err := backend.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return u, b
}

// cache opens a new cache directory on b.
func cache(t *testing.T, b backend.Backend) *syncer.Syncer {
	t.Helper()
	s, err := syncer.Open(context.Background(), syncer.Config{Backend: b, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder keeps every event of one watch; on, when set, runs in the
// watch's goroutine with each event (between steps, so a request counter
// read there is exact).
type recorder struct {
	mu     sync.Mutex
	events []watch.Event
	wake   chan struct{}
	on     func(watch.Event)
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{})} }

func (r *recorder) add(e watch.Event) {
	if r.on != nil {
		r.on(e)
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	close(r.wake)
	r.wake = make(chan struct{})
	r.mu.Unlock()
}

// len is the number of events so far: a cursor for wait.
func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// wait returns the first event from index from on that ok accepts, and
// its index, failing the test after deadline.
func (r *recorder) wait(t *testing.T, from int, what string, ok func(watch.Event) bool) (watch.Event, int) {
	t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for i := from; ; {
		r.mu.Lock()
		for ; i < len(r.events); i++ {
			if ok(r.events[i]) {
				e := r.events[i]
				r.mu.Unlock()
				return e, i
			}
		}
		wake := r.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			t.Fatalf("no %s within %v; events: %+v", what, deadline, r.snapshot())
		}
	}
}

func (r *recorder) snapshot() []watch.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]watch.Event(nil), r.events...)
}

// running is one watch in a goroutine.
type running struct {
	*recorder
	stop func() error // cancels the watch and returns Run's error
}

// start runs a watch of c; the test's cleanup stops it.
func start(t *testing.T, c watch.Cache, opts watch.Options, r *recorder) *running {
	t.Helper()
	if r == nil {
		r = newRecorder()
	}
	opts.OnEvent = r.add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch.Run(ctx, c, opts) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(deadline):
				err = errors.New("watch did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	w := &running{recorder: r, stop: stop}
	w.wait(t, 0, "started event", kind(watch.KindStarted))
	return w
}

func kind(k watch.Kind) func(watch.Event) bool {
	return func(e watch.Event) bool { return e.Kind == k }
}

// landed accepts a pull or push event after which path holds want in
// the cache at root.
func landed(root, path, want string) func(watch.Event) bool {
	return func(e watch.Event) bool {
		if e.Kind != watch.KindPull && e.Kind != watch.KindPush {
			return false
		}
		got, err := os.ReadFile(filepath.Join(root, path))
		return err == nil && string(got) == want
	}
}

func write(t *testing.T, root, path, data string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// pullFresh pulls the bucket into a new cache and returns what path holds
// there: what the bucket committed.
func pullFresh(t *testing.T, b backend.Backend, path string) string {
	t.Helper()
	s := cache(t, b)
	if _, err := s.Pull(context.Background(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Root(), filepath.FromSlash(path)))
	if err != nil {
		return "<absent: " + err.Error() + ">"
	}
	return string(data)
}

// fast are options for tests: short intervals, so conditions come soon.
func fast() watch.Options {
	return watch.Options{Poll: 50 * time.Millisecond, Debounce: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Walk: -1}
}
