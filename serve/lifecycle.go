package serve

import (
	"context"
	"net/http"
	"time"
)

// track counts requests in flight, so the service can tell when it has
// been idle (IdleExit).
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := &s.host
		h.mu.Lock()
		h.inflight++
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.inflight--
			h.lastBusy = time.Now()
			h.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// idleSince reports whether the service is idle now (no request in
// flight, no job running, no lock held for a client) and since when.
func (s *Server) idleSince() (time.Time, bool) {
	s.mu.Lock()
	leases := len(s.leases)
	s.mu.Unlock()
	s.jobs.mu.Lock()
	running := 0
	for _, j := range s.jobs.order {
		if j.State == JobRunning {
			running++
		}
	}
	s.jobs.mu.Unlock()
	h := &s.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight > 0 || running > 0 || leases > 0 {
		return time.Time{}, false
	}
	return h.lastBusy, true
}

// IdleExit returns a channel closed once the service has been idle for d:
// no request in flight, no job running and no lock held for a client.
// A service a host started for itself then exits instead of lingering;
// a client that still wants it starts it again. The check runs every d/4
// (at least every second) until ctx is done.
func (s *Server) IdleExit(ctx context.Context, d time.Duration) <-chan struct{} {
	out := make(chan struct{})
	every := min(max(d/4, 10*time.Millisecond), time.Second)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.base.Done():
				return
			case <-t.C:
			}
			if since, idle := s.idleSince(); idle && time.Since(since) >= d {
				close(out)
				return
			}
		}
	}()
	return out
}
