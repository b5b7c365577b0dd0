package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// The crash sweep runs one operation in a child process (this test binary
// re-executed with -test.run=TestCrashHelper) on an fs bucket, killed with
// SIGKILL just before its k-th request, for k = 1, 2, ... until the
// operation completes without reaching k. After each kill a fresh process
// (this one) checks the remote and that the next run converges with
// nothing lost.

const (
	envCrashOp     = "SILT_CRASH_OP"
	envCrashBucket = "SILT_CRASH_BUCKET"
	envCrashDir    = "SILT_CRASH_DIR"
	envCrashAt     = "SILT_CRASH_AT"
	envCrashFile   = "SILT_CRASH_FILE"
)

var crashPoints atomic.Int64

// killer is a backend that kills its own process just before request at.
type killer struct {
	backend.Backend
	at, n int64
}

func (k *killer) tick() {
	if atomic.AddInt64(&k.n, 1) == k.at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

func (k *killer) Get(ctx context.Context, key string, o backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	k.tick()
	return k.Backend.Get(ctx, key, o)
}

func (k *killer) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, c backend.Cond) (backend.ObjectInfo, error) {
	k.tick()
	return k.Backend.Put(ctx, key, r, size, c)
}

func (k *killer) Delete(ctx context.Context, key string, c backend.Cond) error {
	k.tick()
	return k.Backend.Delete(ctx, key, c)
}

func (k *killer) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	k.tick()
	return k.Backend.Stat(ctx, key)
}

func (k *killer) List(ctx context.Context, p string, o backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	k.tick()
	return k.Backend.List(ctx, p, o, fn)
}

// TestCrashHelper is the child process of the sweep; without its
// environment it does nothing.
func TestCrashHelper(t *testing.T) {
	op := os.Getenv(envCrashOp)
	if op == "" {
		t.Skip("only runs as the crash sweep's child process")
	}
	ctx := context.Background()
	store, err := fs.New(os.Getenv(envCrashBucket))
	if err != nil {
		t.Fatal(err)
	}
	at, _ := strconv.ParseInt(os.Getenv(envCrashAt), 10, 64)
	b := &killer{Backend: store, at: at}
	if err := crashOp(ctx, op, b, os.Getenv(envCrashDir), os.Getenv(envCrashFile)); err != nil {
		t.Fatal(err)
	}
}

// crashOp runs one operation of the sweep against b.
func crashOp(ctx context.Context, op string, b backend.Backend, dir, file string) error {
	if op == "gc" {
		_, err := index.GC(ctx, b, index.GCOptions{OlderThan: 0})
		return err
	}
	if op == "recover" {
		_, err := index.Recover(ctx, b, crashRecoverOptions())
		return err
	}
	if op == "gchistory" {
		return gcPastGrace(ctx, b)
	}
	if _, ok := crashMigrateFrom(op); ok {
		_, err := index.Migrate(ctx, b, index.MigrateOptions{})
		return err
	}
	if op == "lock" {
		l, err := lock.New(b, "locks/crash", lock.Options{TTL: 300 * time.Millisecond, MaxWait: 5 * time.Second})
		if err != nil {
			return err
		}
		le, err := l.Acquire(ctx)
		if err != nil {
			return err
		}
		return le.Release(ctx)
	}
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir, Concurrency: 1, ShardMaxEntries: 4, Lazy: serve.DefaultLazy, CheckpointEvery: modelCheckpointEvery})
	if err != nil {
		return err
	}
	defer s.Close()
	switch op {
	case "push":
		_, err = s.Push(ctx, syncer.PushOptions{})
	case "prepare":
		var pm *syncer.PushManifest
		if pm, _, err = s.PreparePush(ctx, syncer.PushOptions{}); err == nil {
			var data []byte
			if data, err = json.Marshal(pm); err == nil {
				err = os.WriteFile(file, data, 0o644)
			}
		}
	case "commit":
		var data []byte
		if data, err = os.ReadFile(file); err == nil {
			var pm syncer.PushManifest
			if err = json.Unmarshal(data, &pm); err == nil {
				_, err = s.CommitPush(ctx, &pm, nil)
			}
		}
	case "pull":
		_, err = s.Pull(ctx, syncer.PullOptions{})
	case "hydrate":
		_, _, err = s.HydrateFile(ctx, "data/t/1/raw")
	default:
		err = fmt.Errorf("unknown crash op %q", op)
	}
	return err
}

// runChild runs op in a child killed before request at; it reports
// whether the child was killed (false: it finished first).
func runChild(t *testing.T, op, bucket, dir, file string, at int) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashOp+"="+op, envCrashBucket+"="+bucket, envCrashDir+"="+dir, envCrashAt+"="+strconv.Itoa(at), envCrashFile+"="+file)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return false
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	t.Fatalf("child %s (crash at %d) failed: %v\n%s", op, at, err, out)
	return false
}

// crashWorld is one fresh bucket with a writer cache a and a reader cache r.
type crashWorld struct {
	bucket, a, r, file string
	store              backend.Backend
}

func newCrashWorld(t *testing.T) *crashWorld {
	w := &crashWorld{bucket: t.TempDir(), a: t.TempDir(), r: t.TempDir(), file: filepath.Join(t.TempDir(), "pm.json")}
	store, err := fs.New(w.bucket)
	if err != nil {
		t.Fatal(err)
	}
	w.store = store
	return w
}

// files the writer commits before the crash (v1) and pushes in it (v2).
var crashV1 = map[string]string{"data/t/1/raw": "raw v1", "data/t/1/latest": "1", "data/deep/er/2/s p.json": "two v1", "data/t/gone": "gone"}
var crashV2 = map[string]string{"data/t/1/raw": "raw v2", "data/t/1/latest": "2", "data/a/b/c/3/new": "three", "data/deep/er/2/s p.json": "two v2"}

func (w *crashWorld) open(t *testing.T, dir string) *syncer.Syncer {
	s, err := syncer.Open(context.Background(), syncer.Config{Backend: w.store, Dir: dir, Concurrency: 1, ShardMaxEntries: 4, Lazy: serve.DefaultLazy, CheckpointEvery: modelCheckpointEvery})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFiles(t *testing.T, s *syncer.Syncer, files map[string]string) {
	for p, c := range files {
		abs := filepath.Join(s.Root(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDirty(p); err != nil {
			t.Fatal(err)
		}
	}
}

// crashMigrateFrom names the format a migrate op of the sweep starts
// from: "migrate3", "migrate4" and "migrate5" migrate a bucket an older
// silt wrote.
func crashMigrateFrom(op string) (int, bool) {
	switch op {
	case "migrate3":
		return index.FormatVersion, true
	case "migrate4":
		return index.LogFormat, true
	case "migrate5":
		return index.DeltaFormat, true
	}
	return 0, false
}

// setup commits v1 from a, lets r pull it, and stages op's work. For a
// migration, an older silt commits v1 and v2 in its format.
func (w *crashWorld) setup(t *testing.T, op string) {
	ctx := context.Background()
	if from, ok := crashMigrateFrom(op); ok {
		v2 := map[string][]byte{"data/t/gone": nil}
		for p, c := range crashV2 {
			v2[p] = []byte(c)
		}
		for _, files := range []map[string][]byte{bytesOf(crashV1), v2} {
			if _, err := legacy.Push(ctx, w.store, from, files); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	a := w.open(t, w.a)
	writeFiles(t, a, crashV1)
	if _, err := a.Push(ctx, syncer.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	r := w.open(t, w.r)
	if _, err := r.Pull(ctx, syncer.PullOptions{MetadataOnly: op == "hydrate"}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	writeFiles(t, a, crashV2)
	if err := os.Remove(filepath.Join(w.a, "data/t/gone")); err != nil {
		t.Fatal(err)
	}
	if err := a.MarkDirty("data/t/gone"); err != nil {
		t.Fatal(err)
	}
	switch op {
	case "pull", "hydrate", "gchistory":
		if _, err := a.Push(ctx, syncer.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	case "recover":
		// v2 is committed, then its manifest is lost: recover brings v1
		// (the newest history copy) back. In the log format the lost
		// hint loses nothing: recover is asked for v1 (seq 1) by name.
		if _, err := a.Push(ctx, syncer.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := w.store.Delete(ctx, index.ManifestKey, backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	case "gc":
		// Garbage for gc: an upload whose commit never happened.
		if _, err := backend.PutBytes(ctx, w.store, "data/orphan", []byte("orphan"), backend.Cond{}); err != nil {
			t.Fatal(err)
		}
	case "commit":
		a.Close()
		if runChild(t, "prepare", w.bucket, w.a, w.file, 0) {
			t.Fatal("prepare was killed without a crash point")
		}
		return
	}
	a.Close()
}

// crashRecoverOptions is what the recover scenario asks for: the newest
// v1 by its seq: a lost hint loses no snapshot of the log.
func crashRecoverOptions() index.RecoverOptions {
	return index.RecoverOptions{Seq: 1}
}

// verify is the fresh process's check after a kill: the index is whole,
// every committed entry is readable (format 2; on format 1 a killed push
// may leave overwritten entries, finding F8), and rerunning the operation
// converges with nothing lost.
func (w *crashWorld) verify(t *testing.T, op string, k int) {
	ctx := context.Background()
	if op == "recover" {
		// Killed before its one commit, the manifest is still missing;
		// after it, the rerun has nothing to do. Either way it converges.
		if _, err := index.Recover(ctx, w.store, crashRecoverOptions()); err != nil {
			t.Fatalf("recover killed at request %d: rerun: %v", k, err)
		}
	}
	if err := checkIndexStructure(ctx, w.store); err != nil {
		t.Fatalf("%s killed at request %d: torn index: %v", op, k, err)
	}
	snap, err := readSnapshot(ctx, w.store)
	if err != nil {
		t.Fatalf("%s killed at request %d: %v", op, k, err)
	}
	for p, e := range snap.Entries {
		if _, err := readEntry(ctx, w.store, p, e); err != nil {
			if format1 && (op == "push" || op == "prepare" || op == "commit") {
				t.Logf("tolerated on format 1 (F8): %s killed at request %d: %q unreadable: %v", op, k, p, err)
				continue
			}
			t.Errorf("%s killed at request %d: committed %q unreadable: %v", op, k, p, err)
		}
	}
	// The next run converges.
	if _, ok := crashMigrateFrom(op); ok {
		// A migration killed at any point can be run again; then the
		// bucket is in the one format, and every snapshot the older silt
		// made is listed and readable.
		if _, err := index.Migrate(ctx, w.store, index.MigrateOptions{}); err != nil {
			t.Fatalf("%s killed at request %d: rerun: %v", op, k, err)
		}
		h, err := index.ReadHead(ctx, w.store, nil)
		if err != nil || h.Manifest.Format != index.DefaultFormat {
			t.Fatalf("%s killed at request %d: after the rerun the head is %v (%v), want format %d", op, k, h.Manifest, err, index.DefaultFormat)
		}
		log, err := index.Log(ctx, w.store)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[uint64]bool{}
		for _, e := range log {
			listed[e.Seq] = true
		}
		if !listed[1] || !listed[2] {
			t.Errorf("%s killed at request %d: the older silt's snapshots 1 and 2 are not both listed: %v", op, k, log)
		}
		expectLogReadable(t, w.store, k)
		w.expectReader(t, op, k, crashV2)
		return
	}
	switch op {
	case "lock":
		l, err := lock.New(w.store, "locks/crash", lock.Options{TTL: 300 * time.Millisecond, MaxWait: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		le, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("lock killed at request %d: the next acquire failed: %v", k, err)
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return
	case "gc":
		if _, err := index.GC(ctx, w.store, index.GCOptions{OlderThan: 0}); err != nil {
			t.Fatalf("gc killed at request %d: rerun: %v", k, err)
		}
		w.expectReader(t, op, k, crashV1)
		return
	case "recover":
		if snap.Seq != 3 {
			t.Errorf("recover killed at request %d: rerun left seq %d, want 3 (above the lost 2)", k, snap.Seq)
		}
		w.expectReader(t, op, k, crashV1)
		return
	case "gchistory":
		expectLogReadable(t, w.store, k)
		if err := gcPastGrace(ctx, w.store); err != nil {
			t.Fatalf("gc killed at request %d: rerun: %v", k, err)
		}
		expectLogReadable(t, w.store, k)
		w.expectReader(t, op, k, crashV2)
		return
	case "commit", "prepare":
		runChild(t, "prepare", w.bucket, w.a, w.file, 0)
		runChild(t, "commit", w.bucket, w.a, w.file, 0)
	case "pull":
		runChild(t, op, w.bucket, w.r, w.file, 0)
		w.expectIn(t, op, k, w.r, crashV2)
	case "hydrate":
		runChild(t, op, w.bucket, w.r, w.file, 0)
		// Hydration fetches the version the cache's own pull recorded (its
		// object is immutable, so it is always there); the next pull brings
		// the newer one.
		if data, err := os.ReadFile(filepath.Join(w.r, "data/t/1/raw")); err != nil || string(data) != crashV1["data/t/1/raw"] {
			t.Errorf("hydrate killed at request %d: rerun left %q, %v", k, data, err)
		}
	default:
		runChild(t, op, w.bucket, w.a, w.file, 0)
	}
	w.expectReader(t, op, k, crashV2)
}

// expectReader checks that a fresh cache pulls exactly want.
func (w *crashWorld) expectReader(t *testing.T, op string, k int, want map[string]string) {
	dir := t.TempDir()
	s := w.open(t, dir)
	st, err := s.Pull(context.Background(), syncer.PullOptions{})
	s.Close()
	if err != nil || st.Files.Conflicts != 0 {
		t.Errorf("%s killed at request %d: fresh pull: %v %v", op, k, err, st.Conflicts)
	}
	w.expectIn(t, op, k, dir, want)
}

func (w *crashWorld) expectIn(t *testing.T, op string, k int, dir string, want map[string]string) {
	got := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == index.InternalDir {
				return filepath.SkipDir
			}
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s killed at request %d: %s holds %q, want %q", op, k, p, got[p], c)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s killed at request %d: %s present, want absent", op, k, p)
		}
	}
}

func TestCrash_EveryRequestIndex_ConvergesWithNothingLost(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary once per crash point")
	}
	for _, op := range []string{"push", "prepare", "commit", "pull", "hydrate", "gc", "gchistory", "recover", "lock", "migrate3", "migrate4", "migrate5"} {
		t.Run(op, func(t *testing.T) {
			for k := 1; k < 200; k++ {
				w := newCrashWorld(t)
				w.setup(t, op)
				dir := w.a
				if op == "pull" || op == "hydrate" {
					dir = w.r
				}
				if !runChild(t, op, w.bucket, dir, w.file, k) {
					t.Logf("%s: %d crash points", op, k-1)
					return
				}
				crashPoints.Add(1)
				w.verify(t, op, k)
			}
			t.Fatalf("%s never completed", op)
		})
	}
}

// gcPastGrace is a gc with a grace period whose clock is 3 hours ahead:
// every superseded snapshot and everything only it names is past the
// grace, so the kill points fall before, inside and between its sweeps.
func gcPastGrace(ctx context.Context, b backend.Backend) error {
	later := time.Now().Add(3 * time.Hour)
	_, err := index.GC(ctx, b, index.GCOptions{OlderThan: time.Hour, RepackBelow: -1, Now: func() time.Time { return later }})
	return err
}

// expectLogReadable checks that every snapshot `silt log` lists is whole
// and every entry of it readable: a gc killed between its sweeps removed
// the history copy before the data only it named.
func expectLogReadable(t *testing.T, b backend.Backend, k int) {
	t.Helper()
	ctx := context.Background()
	log, err := index.Log(ctx, b)
	if err != nil {
		t.Fatalf("gc killed at request %d: log: %v", k, err)
	}
	for _, e := range log {
		v, err := readSnapshotAt(ctx, b, e.Seq)
		if err != nil {
			t.Errorf("gc killed at request %d: log lists seq %d, unreadable: %v", k, e.Seq, err)
			continue
		}
		for p, en := range v.Entries {
			if _, err := readEntry(ctx, b, p, en); err != nil {
				t.Errorf("gc killed at request %d: log lists seq %d, %q unreadable: %v", k, e.Seq, p, err)
			}
		}
	}
}

func bytesOf(files map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for p, c := range files {
		out[p] = []byte(c)
	}
	return out
}
