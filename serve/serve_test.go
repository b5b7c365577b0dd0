package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/syncer"
)

// started is a running service on a real Unix socket.
type started struct {
	dir    string
	srv    *Server
	client *Client
	store  backend.Backend
}

func start(t *testing.T, store backend.Backend) *started {
	t.Helper()
	dir := t.TempDir()
	srv, err := Open(t.Context(), Config{Syncer: syncer.Config{Backend: store, Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	c, err := Dial(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return &started{dir: dir, srv: srv, client: c, store: store}
}

func write(t *testing.T, dir, p, body string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestServer_Push_ThenPeerPulls(t *testing.T) {
	st := start(t, mem.New())
	write(t, st.dir, "data/t/m1/a", "one")
	write(t, st.dir, "data/t/m2/b", "two")
	if err := st.client.MarkPaths(t.Context(), "data/t/m1", "data/t/m2"); err != nil {
		t.Fatal(err)
	}
	pushed, err := st.client.Push(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Files.Uploaded != 2 {
		t.Fatalf("uploaded %d, want 2: %+v", pushed.Files.Uploaded, pushed)
	}
	peer, err := syncer.Open(t.Context(), syncer.Config{Backend: st.store, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	pulled, err := peer.Pull(t.Context(), syncer.PullOptions{Scope: []string{"data/t/m1"}})
	if err != nil {
		t.Fatal(err)
	}
	if pulled.Files.Downloaded != 1 {
		t.Fatalf("peer downloaded %d, want 1 (scope m1 only)", pulled.Files.Downloaded)
	}
}

func TestServer_Pull_ScopedThroughService(t *testing.T) {
	store := mem.New()
	src := t.TempDir()
	peer, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: src})
	if err != nil {
		t.Fatal(err)
	}
	write(t, src, "data/t/m1/a", "one")
	write(t, src, "data/t/m2/b", "two")
	if _, err := peer.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	st := start(t, store)
	got, err := st.client.Pull(t.Context(), syncer.PullOptions{Scope: []string{"data/t/m2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Files.Downloaded != 1 {
		t.Fatalf("downloaded %d, want 1", got.Files.Downloaded)
	}
	if b, err := os.ReadFile(filepath.Join(st.dir, "data/t/m2/b")); err != nil || string(b) != "two" {
		t.Fatalf("data/t/m2/b = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(st.dir, "data/t/m1/a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("out-of-scope file pulled: %v", err)
	}
}

func TestServer_Push_TooManyDeletesIsTypedError(t *testing.T) {
	st := start(t, mem.New())
	write(t, st.dir, "a", "1")
	write(t, st.dir, "b", "2")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(st.dir, "a"))
	os.Remove(filepath.Join(st.dir, "b"))
	_, err := st.client.Push(t.Context(), syncer.PushOptions{All: true, MaxDelete: 1})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeTooManyDeletes || e.Status != http.StatusConflict {
		t.Fatalf("err = %#v, want code %s", err, CodeTooManyDeletes)
	}
	if !errors.Is(err, syncer.ErrTooManyDeletes) {
		t.Fatalf("errors.Is(%v, ErrTooManyDeletes) is false", err)
	}
}

func TestServer_Pull_InvalidPathIsTypedError(t *testing.T) {
	st := start(t, mem.New())
	_, err := st.client.Pull(t.Context(), syncer.PullOptions{Scope: []string{"../escape"}})
	if !errors.Is(err, index.ErrInvalidPath) {
		t.Fatalf("err = %v, want invalid_path", err)
	}
	err = st.client.MarkPaths(t.Context(), ".silt/state.db")
	if !errors.Is(err, index.ErrInvalidPath) {
		t.Fatalf("mark .silt: err = %v, want invalid_path", err)
	}
}

func TestServer_Request_UnknownFieldIsBadRequest(t *testing.T) {
	st := start(t, mem.New())
	err := st.client.call(t.Context(), http.MethodPost, "/v1/pull", map[string]any{"scopes": []string{"x"}}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Status != http.StatusBadRequest {
		t.Fatalf("err = %#v, want bad_request", err)
	}
	err = st.client.call(t.Context(), http.MethodGet, "/v2/pull", nil, nil)
	if !errors.As(err, &e) || e.Code != CodeNotFound {
		t.Fatalf("unknown endpoint: err = %#v, want not_found", err)
	}
}

func TestServer_PrepareCommit_TwoPhase(t *testing.T) {
	st := start(t, mem.New())
	write(t, st.dir, "data/t/m1/a", "one")
	if err := st.client.MarkPaths(t.Context(), "data/t/m1"); err != nil {
		t.Fatal(err)
	}
	prev, err := st.client.PreviewPush(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if prev.New != 1 || prev.Total != 1 {
		t.Fatalf("preview %+v, want 1 new", prev)
	}
	prep, err := st.client.Prepare(t.Context(), syncer.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if prep.Files != 1 || !json.Valid(prep.Manifest) {
		t.Fatalf("prepare: files %d, manifest %s", prep.Files, prep.Manifest)
	}
	if snap, err := index.OpenSnapshot(t.Context(), st.store); err != nil || snap.Manifest().Entries() != 0 {
		t.Fatalf("prepare committed something: %v", err)
	}
	if _, err := st.client.Commit(t.Context(), prep.Manifest, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := index.OpenSnapshot(t.Context(), st.store)
	if err != nil || snap.Manifest().Entries() != 1 {
		t.Fatalf("after commit: %v entries, %v", snap.Manifest().Entries(), err)
	}
	status, err := st.client.Status(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Dirty) != 0 || status.RemoteMoved {
		t.Fatalf("status after commit: %+v", status)
	}
}

func TestServer_Job_AsyncPullSucceeds(t *testing.T) {
	st := start(t, mem.New())
	j, err := st.client.Start(t.Context(), "/v1/pull", PullRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID == "" || j.Op != "pull" {
		t.Fatalf("job %+v", j)
	}
	done, err := st.client.Wait(t.Context(), j.ID, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var stats syncer.Stats
	if done.State != JobSucceeded || json.Unmarshal(done.Result, &stats) != nil || stats.Op != "pull" {
		t.Fatalf("job %+v", done)
	}
	if _, err := st.client.Job(t.Context(), "nope"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("unknown job: %v", err)
	}
}

// blocking is a store whose reads wait until their context ends, so an
// operation is in flight for as long as a test needs.
type blocking struct {
	backend.Backend
	entered chan struct{}
}

func (b *blocking) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, backend.ObjectInfo{}, ctx.Err()
}

func TestServer_Job_CancelEndsRunningPull(t *testing.T) {
	store := &blocking{Backend: mem.New(), entered: make(chan struct{}, 1)}
	st := start(t, store)
	j, err := st.client.Start(t.Context(), "/v1/pull", PullRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-store.entered
	if got, err := st.client.Job(t.Context(), j.ID); err != nil || got.State != JobRunning {
		t.Fatalf("job before cancel: %+v, %v", got, err)
	}
	if _, err := st.client.Cancel(t.Context(), j.ID); err != nil {
		t.Fatal(err)
	}
	done, err := st.client.Wait(t.Context(), j.ID, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != JobCanceled || done.Error == nil || done.Error.Code != CodeCanceled {
		t.Fatalf("job after cancel: %+v", done)
	}
}

func TestServer_Shutdown_CancelsJobsPastDeadline(t *testing.T) {
	store := &blocking{Backend: mem.New(), entered: make(chan struct{}, 1)}
	dir := t.TempDir()
	srv, err := Open(t.Context(), Config{Syncer: syncer.Config{Backend: store, Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	c, err := Dial(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Start(t.Context(), "/v1/pull", PullRequest{}); err != nil {
		t.Fatal(err)
	}
	<-store.entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no grace: cancel what runs
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := Dial(t.Context(), dir); !errors.Is(err, ErrNotServed) {
		t.Fatalf("dial after shutdown: %v, want ErrNotServed", err)
	}
	// The cache is free again for a plain Syncer.
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: mem.New(), Dir: dir})
	if err != nil {
		t.Fatalf("open after shutdown: %v", err)
	}
	s.Close()
}

func TestListen_SecondServiceIsRefused(t *testing.T) {
	st := start(t, mem.New())
	_, err := Listen(t.Context(), st.dir)
	if !errors.Is(err, ErrServed) {
		t.Fatalf("second Listen: %v, want ErrServed", err)
	}
	if _, err := Dial(t.Context(), st.dir); err != nil {
		t.Fatalf("the first service stopped answering: %v", err)
	}
}

func TestListen_StaleSocketIsReplaced(t *testing.T) {
	dir := t.TempDir()
	p, err := SocketPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // leaves the socket file, as a killed service does
	if _, err := Dial(t.Context(), dir); !errors.Is(err, ErrNotServed) {
		t.Fatalf("dial a stale socket: %v, want ErrNotServed", err)
	}
	ln2, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	ln2.Close()
}

func TestSocketPath_LongDirFitsTheLimit(t *testing.T) {
	long := filepath.Join(t.TempDir(), "a-directory-name-long-enough-to-push-the-socket-path-past-the-limit-of-sun-path", "x")
	p, err := SocketPath(long)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > maxSocketPath {
		t.Fatalf("socket path %d bytes: %s", len(p), p)
	}
	q, _ := SocketPath(long)
	if p != q {
		t.Fatalf("not deterministic: %s vs %s", p, q)
	}
}

func TestServer_Lock_AcquireHeartbeatRelease(t *testing.T) {
	st := start(t, mem.New())
	le, err := st.client.Acquire(t.Context(), LockRequest{Key: "data/t/m1/.lock", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if !le.Held || le.Token != 1 || le.Nonce == "" {
		t.Fatalf("lease %+v", le)
	}
	info, err := st.client.Inspect(t.Context(), "data/t/m1/.lock")
	if err != nil || !info.Held || info.Nonce != le.Nonce {
		t.Fatalf("inspect: %+v, %v", info, err)
	}
	if _, err := st.client.Acquire(t.Context(), LockRequest{Key: "data/t/m1/.lock"}); !errors.Is(err, lock.ErrTimeout) {
		t.Fatalf("second acquire: %v, want lock_timeout", err)
	}
	if _, err := st.client.Heartbeat(t.Context(), le.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.client.Release(t.Context(), le.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.client.Heartbeat(t.Context(), le.ID); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("heartbeat after release: %v, want not_found", err)
	}
	again, err := st.client.Acquire(t.Context(), LockRequest{Key: "data/t/m1/.lock"})
	if err != nil || again.Token != 2 {
		t.Fatalf("acquire after release: %+v, %v", again, err)
	}
}

func TestServer_Lock_ExpiresWithoutClientHeartbeat(t *testing.T) {
	st := start(t, mem.New())
	le, err := st.client.Acquire(t.Context(), LockRequest{Key: "k", TTLMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Acquire waits (up to 10 s) until the service released the silent
	// client's lease; the store's lock then is free, not stale.
	again, err := st.client.Acquire(t.Context(), LockRequest{Key: "k", TTLMs: 60000, MaxWaitMs: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if again.Token != le.Token+1 {
		t.Fatalf("token %d after %d", again.Token, le.Token)
	}
}

func TestServer_Control_RecordLifecycle(t *testing.T) {
	st := start(t, mem.New())
	ctx := t.Context()
	if _, err := st.client.ControlGet(ctx, "runs/1"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("get missing: %v", err)
	}
	created, err := st.client.ControlPutIfAbsent(ctx, "runs/1", []byte("claim-a"))
	if err != nil || !created {
		t.Fatalf("put-if-absent: %v %v", created, err)
	}
	created, err = st.client.ControlPutIfAbsent(ctx, "runs/1", []byte("claim-b"))
	if err != nil || created {
		t.Fatalf("second put-if-absent: %v %v", created, err)
	}
	if err := st.client.ControlPut(ctx, "runs/2", []byte{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if b, err := st.client.ControlGet(ctx, "runs/1"); err != nil || string(b) != "claim-a" {
		t.Fatalf("get: %q %v", b, err)
	}
	keys, err := st.client.ControlList(ctx, "runs/")
	if err != nil || len(keys) != 2 {
		t.Fatalf("list: %v %v", keys, err)
	}
	if err := st.client.ControlDelete(ctx, "runs/1"); err != nil {
		t.Fatal(err)
	}
	keys, err = st.client.ControlList(ctx, "runs/")
	if err != nil || len(keys) != 1 || keys[0] != "runs/2" {
		t.Fatalf("list after delete: %v %v", keys, err)
	}
}

func TestServer_Serve_TCPNeedsToken(t *testing.T) {
	srv, err := Open(t.Context(), Config{Syncer: syncer.Config{Backend: mem.New(), Dir: t.TempDir()}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	addr := ln.Addr().String()
	if _, err := NewTCPClient(addr, "wrong").Info(t.Context()); err == nil {
		t.Fatal("wrong token accepted")
	} else if e := (*Error)(nil); !errors.As(err, &e) || e.Code != CodeUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	info, err := NewTCPClient(addr, testToken).Info(t.Context())
	if err != nil || info.API != APIVersion {
		t.Fatalf("info: %+v, %v", info, err)
	}
}

func TestServer_Serve_TCPWithoutTokenIsRefused(t *testing.T) {
	srv, err := Open(t.Context(), Config{Syncer: syncer.Config{Backend: mem.New(), Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := srv.Serve(ln); err == nil {
		t.Fatal("served TCP without a token")
	}
}

func TestJobTable_Progress_CountsThatJobsTransfers(t *testing.T) {
	var jt jobTable
	jt.init(time.Minute)
	a, _ := jt.start(context.Background(), "pull", "pull")
	b, _ := jt.start(context.Background(), "pull", "pull")
	jt.progressOf(a, syncer.Progress{Op: "pull", Phase: "transfer", Done: 1, Total: 3, Bytes: 10, DoneBytes: 10})
	jt.progressOf(b, syncer.Progress{Op: "pull", Phase: "transfer", Done: 1, Total: 2, Bytes: 7, DoneBytes: 7})
	jt.progressOf(a, syncer.Progress{Op: "pull", Phase: "transfer", Done: 2, Total: 3, Bytes: 10, DoneBytes: 20})
	jt.progressOf(a, syncer.Progress{Op: "pull", Phase: "check", Checked: 9})
	if got := jt.snapshot(a).Progress; got != (JobProgress{Files: 2, TotalFiles: 3, Bytes: 20}) {
		t.Errorf("a: %+v", got)
	}
	if got := jt.snapshot(b).Progress; got != (JobProgress{Files: 1, TotalFiles: 2, Bytes: 7}) {
		t.Errorf("b: %+v", got)
	}
}

// The server adds no lock of its own: while a pull is stuck on the store,
// a request that needs neither the Syncer's turn nor a read is answered.
func TestServer_Requests_RunWhileAnOperationIsInFlight(t *testing.T) {
	store := &blocking{Backend: mem.New(), entered: make(chan struct{}, 1)}
	st := start(t, store)
	j, err := st.client.Start(t.Context(), "/v1/pull", PullRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-store.entered
	if err := st.client.ControlPut(t.Context(), "runs/1", []byte("x")); err != nil {
		t.Fatalf("control put during a pull: %v", err)
	}
	if info, err := st.client.Info(t.Context()); err != nil || info.API != APIVersion {
		t.Fatalf("info during a pull: %+v, %v", info, err)
	}
	if got, err := st.client.Job(t.Context(), j.ID); err != nil || got.State != JobRunning {
		t.Fatalf("the pull is not in flight any more: %+v, %v", got, err)
	}
	if _, err := st.client.Cancel(t.Context(), j.ID); err != nil {
		t.Fatal(err)
	}
}
