package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

func TestServer_Watch_StreamsStepsUntilClientGoes(t *testing.T) {
	store := mem.New()
	st := start(t, store)
	hs := httptest.NewServer(st.srv.Handler())
	defer hs.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := strings.NewReader(`{"pollMs":50,"debounceMs":50,"walkMs":-1}`)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/watch", body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("reply %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan event, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				lines <- e
			}
		}
	}()
	next := func(what string, ok func(event) bool) {
		t.Helper()
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		for {
			select {
			case e, more := <-lines:
				if !more {
					t.Fatalf("stream ended before %s", what)
				}
				if ok(e) {
					return
				}
			case <-timer.C:
				t.Fatalf("no %s within 30s", what)
			}
		}
	}
	next("started", func(e event) bool { return e.Watch != nil && e.Watch.Kind == watch.KindStarted })
	write(t, st.dir, "data/w/f", "watched")
	next("the change line", func(e event) bool { return e.Change != nil && e.Change.Path == "data/w/f" })
	next("the push", func(e event) bool {
		return e.Watch != nil && e.Watch.Kind == watch.KindPush && e.Watch.Stats.Files.Uploaded == 1
	})
	// A peer's pull sees the watched write.
	peer, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(peer.Root(), "data/w/f")); err != nil || string(got) != "watched" {
		t.Fatalf("peer holds %q, %v", got, err)
	}
	cancel() // the client goes away: the watch job ends, cleanly
	h := &st.srv.host
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		h.mu.Lock()
		ended := false
		for _, e := range h.events {
			ended = ended || (e.Type == EventOp && e.Op == "watch" && e.State == JobSucceeded)
		}
		wake := h.wake
		h.mu.Unlock()
		if ended {
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			t.Fatal("the watch job did not end after its client went away")
		}
	}
}

func TestServer_Watch_NegativeDebounceIsBadRequest(t *testing.T) {
	st := start(t, mem.New())
	hs := httptest.NewServer(st.srv.Handler())
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/watch", "application/json", strings.NewReader(`{"debounceMs":-1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestServer_Watch_ShutdownEndsTheStreamCleanly(t *testing.T) {
	st := start(t, mem.New())
	hs := httptest.NewServer(st.srv.Handler())
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/watch", "application/json", strings.NewReader(`{"pollMs":50}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var sawStarted bool
	var last event
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Watch != nil && e.Watch.Kind == watch.KindStarted && !sawStarted {
			sawStarted = true
			st.srv.host.stop() // what Shutdown does first: long-lived streams end
		}
		last = e
	}
	var res WatchResult
	if !sawStarted || last.Result == nil || json.Unmarshal(last.Result, &res) != nil || !res.Stopped || res.Job == "" {
		t.Fatalf("the stream did not end with a clean stop: started %v, last %+v", sawStarted, last)
	}
}

func TestClient_Watch_EventsThroughTheSocket(t *testing.T) {
	st := start(t, mem.New())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := make(chan watch.Event, 256)
	done := make(chan error, 1)
	go func() {
		done <- st.client.Watch(ctx, WatchRequest{PollMs: 50, DebounceMs: 50, WalkMs: -1}, func(e watch.Event) { events <- e })
	}()
	wait := func(what string, ok func(watch.Event) bool) {
		t.Helper()
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		for {
			select {
			case e := <-events:
				if ok(e) {
					return
				}
			case err := <-done:
				t.Fatalf("Watch ended before %s: %v", what, err)
			case <-timer.C:
				t.Fatalf("no %s within 30s", what)
			}
		}
	}
	wait("started", func(e watch.Event) bool { return e.Kind == watch.KindStarted })
	write(t, st.dir, "via/client", "x")
	wait("the push", func(e watch.Event) bool { return e.Kind == watch.KindPush && e.Stats.Files.Uploaded == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch after cancel: %v, want nil", err)
	}
}
