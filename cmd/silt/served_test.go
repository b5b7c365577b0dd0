package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// servedWithLazyFile is a cache a `silt serve` owns whose pull recorded
// data/t/m4/x.bin (a --lazy match) without its bytes.
func servedWithLazyFile(t *testing.T) (a, b string) {
	_, dirs := setup(t, 2)
	a, b = dirs[0], dirs[1]
	startServe(t, a)
	write(t, b, "data/t/m4/x.bin", "lazy bytes")
	write(t, b, "data/t/m4/meta", "small")
	ok(t, "push", "--dir", b)
	ok(t, "pull", "--dir", a, "--lazy", "**/*.bin")
	return a, b
}

func absent(t *testing.T, dir, p string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
	return os.IsNotExist(err)
}

func TestCLI_Regression_PullLazyThroughServiceRecordsWithoutBytes(t *testing.T) {
	a, _ := servedWithLazyFile(t)
	if !absent(t, a, "data/t/m4/x.bin") {
		t.Fatal("pull --lazy '**/*.bin' through the service downloaded data/t/m4/x.bin")
	}
	if read(t, a, "data/t/m4/meta") != "small" {
		t.Fatal("the file --lazy does not match was not downloaded")
	}
	if out := ok(t, "status", "--dir", a, "--offline").stdout; !strings.Contains(out, "lazy: 1 file ") {
		t.Fatalf("status after a lazy pull through the service:\n%s", out)
	}
}

func TestCLI_Regression_SyncThroughServiceKeepsLazyFilesLazy(t *testing.T) {
	a, _ := servedWithLazyFile(t)
	ok(t, "sync", "--dir", a)
	if !absent(t, a, "data/t/m4/x.bin") {
		t.Fatal("sync through the service downloaded a lazy file (KeepLazy dropped)")
	}
}

func TestCLI_Regression_VerboseThroughServicePrintsPerFileLines(t *testing.T) {
	_, dirs := setup(t, 1)
	startServe(t, dirs[0])
	write(t, dirs[0], "data/t/m1/a", "one")
	r := ok(t, "push", "--dir", dirs[0], "-v")
	if !strings.Contains(r.stderr, "upload   data/t/m1/a") {
		t.Fatalf("push -v through the service printed no per-file line:\n%s", r.stderr)
	}
}

func TestCLI_Regression_StatusVerboseThroughServiceDescribesTheStore(t *testing.T) {
	_, dirs := setup(t, 1)
	startServe(t, dirs[0])
	out := ok(t, "status", "--dir", dirs[0], "-v").stdout
	if !strings.Contains(out, "store: file") || strings.Contains(out, "store: ?") {
		t.Fatalf("status -v through the service:\n%s", out)
	}
}

func TestCLI_Regression_PushLockThroughServiceCommitsUnderTheLock(t *testing.T) {
	_, dirs := setup(t, 1)
	startServe(t, dirs[0])
	write(t, dirs[0], "data/t/m1/a", "one")
	r := silt(t, "push", "--dir", dirs[0], "--lock", "deploy")
	if r.code != 0 || strings.Contains(r.stderr, "panic") {
		t.Fatalf("push --lock through the service: exit %d\n%s", r.code, r.stderr)
	}
	if v := object(t, ok(t, "lock", "acquire", "--dir", dirs[0], "--json", "deploy")); v["token"] != 2.0 {
		t.Errorf("token after push --lock = %v, want 2 (the push held token 1)", v["token"])
	}
}

func TestCLI_Regression_InitAdoptWhileServedNamesTheService(t *testing.T) {
	u, dirs := setup(t, 1)
	startServe(t, dirs[0])
	write(t, dirs[0], "data/t/m1/a", "one")
	r := silt(t, "init", "--dir", dirs[0], "--adopt", u)
	wantCode(t, r, exitRefused, "init", "--adopt")
	if !strings.Contains(r.stderr, "silt serve (pid ") {
		t.Fatalf("init --adopt on a served directory does not name the service:\n%s", r.stderr)
	}
}

// blockPuts holds every Put (a push's uploads; the commit comes after
// them) until released, and
// says when the first one arrived: a push stuck mid-upload, for as long
// as a test needs, without timing.
type blockPuts struct {
	backend.Backend
	once    sync.Once
	arrived chan struct{}
	release chan struct{}
}

func (b *blockPuts) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	b.once.Do(func() { close(b.arrived) })
	select {
	case <-b.release:
	case <-ctx.Done():
		return backend.ObjectInfo{}, ctx.Err()
	}
	return b.Backend.Put(ctx, key, body, size, cond)
}

// A process that owns a cache serves it while it runs: a second silt
// process's scoped pull of one model goes through it and completes while
// the owner's push of another model is still uploading.
func TestCLI_SecondProcess_ScopedPullRunsBesideALongPush(t *testing.T) {
	u, dirs := setup(t, 2)
	a, b := dirs[0], dirs[1]
	write(t, b, "data/t/m2/x", "two")
	ok(t, "push", "--dir", b)

	store, err := fs.New(strings.TrimPrefix(u, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	blk := &blockPuts{Backend: store, arrived: make(chan struct{}), release: make(chan struct{})}
	owner, err := serve.OpenCache(t.Context(), syncer.Config{Backend: blk, Dir: a}, serve.OpenOptions{Serve: true, Owner: "silt push"})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	write(t, a, "data/t/m1/big", strings.Repeat("x", 4<<20))
	pushed := make(chan error, 1)
	go func() {
		_, err := owner.Push(context.Background(), syncer.PushOptions{Paths: []string{"data/t/m1"}})
		pushed <- err
	}()
	<-blk.arrived

	r := ok(t, "pull", "--dir", a, "--scope", "data/t/m2", "--json")
	if got := read(t, a, "data/t/m2/x"); got != "two" {
		t.Fatalf("scoped pull beside the push: data/t/m2/x = %q", got)
	}
	select {
	case err := <-pushed:
		t.Fatalf("the push ended (%v) before the pull was checked: the test proves nothing", err)
	default:
	}
	if v := object(t, r); v["files"].(map[string]any)["downloaded"] != 1.0 {
		t.Errorf("scoped pull: %v", v)
	}
	close(blk.release)
	if err := <-pushed; err != nil {
		t.Fatalf("push after release: %v", err)
	}
}
