package serve

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/namespace"
	"github.com/siltsync/silt/syncer"
)

// Regression (issue 20): the only health check was silt verify, which
// writes scratch keys and reads every shard. /v1/health costs one read.
func TestServer_Health_OneReadNoWrite(t *testing.T) {
	store := wrap.Count(mem.New())
	st := start(t, store)
	write(t, st.dir, "a", "1")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	before := store.Counts()
	h, err := st.client.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	after := store.Counts()
	if !h.Healthy || h.Details["seq"] != "1" || h.DatastoreType == "" || h.LatencyMs < 0 {
		t.Fatalf("health %+v", h)
	}
	sent := after.Get + after.Put + after.CondPut + after.Delete + after.List + after.Stat -
		(before.Get + before.Put + before.CondPut + before.Delete + before.List + before.Stat)
	// The cache holds the head it pushed: the check is the conditional
	// read of the next log entry, one request whatever the bucket's size.
	if sent != 1 || after.Put != before.Put || after.CondPut != before.CondPut || after.Delete != before.Delete {
		t.Fatalf("health sent %d requests (puts %d→%d), want one read", sent, before.Put, after.Put)
	}
	if h.Requests.Total != sent || h.Requests.Get+h.Requests.Stat != sent {
		t.Fatalf("health reports requests %+v, sent %d reads", h.Requests, sent)
	}
}

// The holder recorded by a lock the service holds for a client is the
// client's process, and inspect reports the last heartbeat.
func TestServer_LockInspect_ClientPIDAndHeartbeatAt(t *testing.T) {
	st := start(t, mem.New())
	le, err := st.client.Acquire(t.Context(), LockRequest{Key: "k", TTLMs: 60000, PID: 31337, Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.client.Inspect(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if info.PID != 31337 || info.Hostname != "host-a" {
		t.Fatalf("inspect pid %d host %q, want the client's 31337 host-a", info.PID, info.Hostname)
	}
	if info.HeartbeatAt.IsZero() || info.HeartbeatAt.Before(info.AcquiredAt) {
		t.Fatalf("heartbeatAt %v, acquiredAt %v", info.HeartbeatAt, info.AcquiredAt)
	}
	if err := st.client.Release(t.Context(), le.ID); err != nil {
		t.Fatal(err)
	}
}

// Regression (issue 20): after a force-release, release answered quietly.
func TestServer_LockRelease_AfterForceRelease_IsLockLost(t *testing.T) {
	st := start(t, mem.New())
	le, err := st.client.Acquire(t.Context(), LockRequest{Key: "k", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]bool
	if err := st.client.call(t.Context(), http.MethodPost, "/v1/lock/force-release", LockRequest{Key: "k", Nonce: le.Nonce}, &out); err != nil || !out["released"] {
		t.Fatalf("force-release: %v %v", out, err)
	}
	if err := st.client.Release(t.Context(), le.ID); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("release after force-release: %v, want lock_lost", err)
	}
}

// Events carry each transfer's progress, and, while a client watches,
// a commit by another cache as a foreign remote move.
func TestServer_Events_ProgressAndRemoteMove(t *testing.T) {
	store := mem.New()
	st := start(t, store)
	st.srv.SetWatchInterval(10 * time.Millisecond)
	write(t, st.dir, "a", "1")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	tail, err := st.client.Events(t.Context(), EventsRequest{Tail: true})
	if err != nil || len(tail.Events) != 0 {
		t.Fatalf("tail: %+v %v", tail, err)
	}
	write(t, st.dir, "c", "3")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{Paths: []string{"c"}}); err != nil {
		t.Fatal(err)
	}
	ev, err := st.client.Events(t.Context(), EventsRequest{After: tail.Next, WaitMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var progress, ended bool
	for _, e := range ev.Events {
		progress = progress || (e.Type == EventProgress && e.Op == "push" && e.Path == "c" && e.Done == 1 && e.Total == 1)
		if e.Path == "a" {
			t.Fatalf("an event from before the tail: %+v", e)
		}
		ended = ended || (e.Type == EventOp && e.Op == "push" && e.State == JobSucceeded)
	}
	if !progress || !ended {
		t.Fatalf("events after a push: %+v", ev.Events)
	}
	// Start the watch (baseline: the service's own commit is no news).
	next := ev.Next
	if _, err := st.client.Events(t.Context(), EventsRequest{After: next, WaitMs: 50, Remote: true}); err != nil {
		t.Fatal(err)
	}
	peer, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	write(t, peer.Root(), "b", "2")
	if _, err := peer.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ev, err := st.client.Events(t.Context(), EventsRequest{After: next, WaitMs: 1000, Remote: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ev.Events {
			if e.Type == EventRemote {
				if !e.Foreign || e.RemoteSeq != 3 || e.SeenSeq != 2 {
					t.Fatalf("remote event %+v, want foreign seq 3 seen 2", e)
				}
				return
			}
		}
		next = ev.Next
	}
	t.Fatal("no remote event after a peer's commit")
}

// The remote watch costs one conditional read per interval: while nothing
// moves, each is answered "not modified".
func TestServer_Events_WatchIsOneConditionalReadPerPoll(t *testing.T) {
	store := wrap.Count(mem.New())
	st := start(t, store)
	// A committed bucket: with no manifest at all, a read also lists one
	// key of the history to tell a fresh bucket from a lost manifest.
	write(t, st.dir, "a", "1")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	st.srv.pollRemote(true, "")
	before := store.Counts()
	st.srv.host.mu.Lock()
	ver := st.srv.host.lastRemote
	st.srv.host.mu.Unlock()
	st.srv.pollRemote(false, ver)
	after := store.Counts()
	if after.Get-before.Get != 1 || after.Put != before.Put || after.List != before.List || after.Stat != before.Stat {
		t.Fatalf("one poll sent %+v → %+v, want one get", before, after)
	}
}

// Regression (issue 20): a service never exited with the host that
// started it. IdleExit fires once nothing is in flight; a held lease
// keeps the service busy.
func TestServer_IdleExit_FiresWhenIdleNotWhileALockIsHeld(t *testing.T) {
	st := start(t, mem.New())
	le, err := st.client.Acquire(t.Context(), LockRequest{Key: "k", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if _, idle := st.srv.idleSince(); idle {
		t.Fatal("idle while a lease is held")
	}
	if err := st.client.Release(t.Context(), le.ID); err != nil {
		t.Fatal(err)
	}
	if _, idle := st.srv.idleSince(); !idle {
		t.Fatal("busy with nothing in flight")
	}
	select {
	case <-st.srv.IdleExit(t.Context(), 20*time.Millisecond):
	case <-time.After(10 * time.Second):
		t.Fatal("IdleExit never fired")
	}
}

// A bucket service (no cache directory) serves locks, control records,
// health, namespaces and reads of any namespace.
func TestBucketServer_LocksControlHealthNamespacesRead(t *testing.T) {
	store := mem.New()
	// A cache in namespace team-a commits a catalog file.
	a, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir(), Namespace: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, a.Root(), ".catalog-export.json", `{"n":1}`)
	if _, err := a.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	a.Close()

	srv, err := OpenBucket(t.Context(), BucketConfig{Backend: store, Namespace: "team-b"})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "run", "b.sock")
	ln, err := ListenAt(t.Context(), sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
	})
	c := NewUnixClient(sock)
	if info, err := c.Info(t.Context()); err != nil || info.Mode != ModeBucket || info.Namespace != "team-b" {
		t.Fatalf("info %+v %v", info, err)
	}
	le, err := c.Acquire(t.Context(), LockRequest{Key: ".datastore.lock", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.Inspect(t.Context(), ".datastore.lock"); err != nil || !info.Held {
		t.Fatalf("inspect %+v %v", info, err)
	}
	if err := c.Release(t.Context(), le.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.ControlPutIfAbsent(t.Context(), "runs/1", []byte("x")); err != nil || !ok {
		t.Fatalf("control put-if-absent %v %v", ok, err)
	}
	// The bucket has no manifest: the health check's read is the GET and
	// the one-key List of the history that tells a fresh bucket from a
	// lost manifest (TestServer_Health_OneReadNoWrite: one on a committed
	// bucket).
	if h, err := c.Health(t.Context()); err != nil || !h.Healthy || h.Requests.Total != 2 || h.Requests.Put != 0 {
		t.Fatalf("health %+v %v", h, err)
	}
	if err := c.RegisterNamespace(t.Context(), "team-b", "repo-b"); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterNamespace(t.Context(), "team-b", "repo-x"); !errors.Is(err, namespace.ErrTaken) {
		t.Fatalf("second owner: %v, want namespace_taken", err)
	}
	ns, err := c.Namespaces(t.Context())
	if err != nil || len(ns) != 1 || ns[0].Namespace != "team-b" || ns[0].Owner != "repo-b" {
		t.Fatalf("namespaces %+v %v", ns, err)
	}
	other := "team-a"
	r, err := c.Read(t.Context(), &other, ".catalog-export.json")
	if err != nil || !r.Found || string(r.Data) != `{"n":1}` {
		t.Fatalf("read team-a's catalog: %+v %v", r, err)
	}
	if r, err := c.Read(t.Context(), nil, ".catalog-export.json"); err != nil || r.Found {
		t.Fatalf("read own (empty) namespace: %+v %v", r, err)
	}
	if _, err := c.Read(t.Context(), nil, "../x"); !errors.Is(err, index.ErrInvalidPath) {
		t.Fatalf("read ../x: %v", err)
	}
	if _, err := c.Pull(t.Context(), syncer.PullOptions{}); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("pull on a bucket service: %v, want not_found", err)
	}
}

// Shutdown ends a running remote watch and waiting long polls at once,
// rather than waiting out the watch (a poll's wait plus two intervals).
func TestServer_Shutdown_EndsTheRemoteWatch(t *testing.T) {
	dir := t.TempDir()
	srv, err := Open(t.Context(), Config{Syncer: syncer.Config{Backend: mem.New(), Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := NewUnixClient(ln.Addr().String())
	if _, err := c.Events(t.Context(), EventsRequest{Remote: true, WaitMs: 1}); err != nil {
		t.Fatal(err)
	}
	polling := make(chan error, 1)
	go func() {
		_, err := c.Events(context.Background(), EventsRequest{Remote: true, WaitMs: maxEventWaitMs})
		polling <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a watch running: %v", err)
	}
	<-served
	select {
	case <-polling:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting long poll outlived the shutdown")
	}
}
