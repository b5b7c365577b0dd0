package lock_test

import (
	"testing"
	"time"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/lock"
)

// A service holding a lock for a client records the client's process,
// not its own: readers (and a host deciding whom to wait for) see the
// real holder.
func TestLock_New_ClientPIDAndHostname(t *testing.T) {
	b := mem.New()
	l := newLock(t, b, "locks/a", lock.Options{PID: 4242, Hostname: "host-7"})
	le, err := l.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer le.Release(t.Context())
	info, err := l.Inspect(t.Context())
	if err != nil || info == nil {
		t.Fatalf("inspect: %v %v", info, err)
	}
	if info.PID != 4242 || info.Hostname != "host-7" {
		t.Fatalf("holder pid %d host %q, want 4242 host-7", info.PID, info.Hostname)
	}
}

// AcquiredAt never moves; HeartbeatAt does, so a host's "older than the
// TTL" rule read on HeartbeatAt sees a live holder as live.
func TestLock_Inspect_ReportsHeartbeatAt(t *testing.T) {
	b := mem.New()
	l := newLock(t, b, "locks/a", lock.Options{TTL: 30 * time.Millisecond})
	le, err := l.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer le.Release(t.Context())
	first, err := l.Inspect(t.Context())
	if err != nil || first == nil {
		t.Fatalf("inspect: %v %v", first, err)
	}
	if !first.HeartbeatAt.Equal(first.AcquiredAt) {
		t.Fatalf("before any heartbeat HeartbeatAt %v, want AcquiredAt %v", first.HeartbeatAt, first.AcquiredAt)
	}
	// Wait for the heartbeat (every TTL/3) to land, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cur, err := l.Inspect(t.Context())
		if err != nil || cur == nil {
			t.Fatalf("inspect: %v %v", cur, err)
		}
		if cur.HeartbeatAt.After(first.AcquiredAt) {
			if !cur.AcquiredAt.Equal(first.AcquiredAt) {
				t.Fatalf("AcquiredAt moved: %v -> %v", first.AcquiredAt, cur.AcquiredAt)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HeartbeatAt never moved past %v", first.AcquiredAt)
		}
		select {
		case <-le.Lost():
			t.Fatal("lease lost")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A lease force-released before its heartbeat noticed reports the loss
// when released, so a service releasing for a client can tell it.
func TestLease_Release_AfterForceRelease_MarksLost(t *testing.T) {
	b := mem.New()
	l := newLock(t, b, "locks/a", lock.Options{TTL: time.Minute})
	le, err := l.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.ForceRelease(t.Context(), le.Nonce()); !ok || err != nil {
		t.Fatalf("force-release: %v %v", ok, err)
	}
	if err := le.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-le.Lost():
	default:
		t.Fatal("Release of a force-released lease left Lost open")
	}
}
