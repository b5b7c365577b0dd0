package serve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/backoff"
	"github.com/siltsync/silt/syncer"
)

// Event kinds of POST /v1/events.
const (
	EventProgress = "progress" // one file transferred by an operation
	EventOp       = "op"       // an operation started or ended
	EventRemote   = "remote"   // the remote manifest moved
)

// Event is one entry of the service's event stream. Only the fields of its
// Type are set.
type Event struct {
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// progress and op
	Op    string `json:"op,omitempty"`
	JobID string `json:"job,omitempty"`
	// progress
	Phase      string `json:"phase,omitempty"`
	Path       string `json:"path,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
	Done       int    `json:"done,omitempty"`
	Total      int    `json:"total,omitempty"`
	DoneBytes  int64  `json:"doneBytes,omitempty"`
	TotalBytes int64  `json:"totalBytes,omitempty"`
	// op: "started", or the job's final state
	State string `json:"state,omitempty"`
	// remote: the manifest's sequence now, and the last one this cache
	// read or wrote (equal when the move was this cache's own commit).
	RemoteSeq uint64 `json:"remoteSeq,omitempty"`
	SeenSeq   uint64 `json:"seenSeq,omitempty"`
	Foreign   bool   `json:"foreign,omitempty"`
}

// EventsRequest is the body of POST /v1/events, a long poll: it answers
// with the events after After as soon as there is one, or empty after
// WaitMs. Remote asks the service to watch the remote manifest while the
// client polls (one conditional read per watch interval).
type EventsRequest struct {
	After  uint64 `json:"after"`
	WaitMs int64  `json:"waitMs,omitempty"`
	Remote bool   `json:"remote,omitempty"`
	// Tail answers at once with no events and the Next that starts the
	// stream from now: a new subscriber's first poll.
	Tail bool `json:"tail,omitempty"`
}

// EventsResponse is the result of POST /v1/events. Next is the After of
// the next poll; Dropped counts events the ring forgot before this poll
// read them.
type EventsResponse struct {
	Events  []Event `json:"events"`
	Next    uint64  `json:"next"`
	Dropped uint64  `json:"dropped,omitempty"`
}

const (
	eventRing            = 4096
	defaultEventWaitMs   = 25_000
	maxEventWaitMs       = 120_000
	DefaultWatchInterval = 2 * time.Second
)

// hostState is what the host-facing endpoints (events, health, lifecycle,
// namespaces) keep in a Server.
type hostState struct {
	mu      sync.Mutex
	events  []Event // ring, oldest first
	next    uint64  // Seq of the next event
	wake    chan struct{}
	seenSeq uint64 // the last manifest seq an operation of this cache saw

	watchEvery time.Duration
	watching   bool
	watchUntil time.Time
	lastRemote string // manifest version the watcher saw last
	remoteSeq  uint64

	inflight int
	lastBusy time.Time

	// quit is done once stop ran: the watcher and long polls end. A
	// context, so the watcher's pause is backoff.Sleep.
	quit    context.Context
	endQuit context.CancelFunc
}

func (h *hostState) init() {
	h.next = 1
	h.wake = make(chan struct{})
	h.watchEvery = DefaultWatchInterval
	h.lastBusy = time.Now()
	h.quit, h.endQuit = context.WithCancel(context.Background())
}

// stop ends the remote watcher and answers waiting long polls, so that
// Shutdown does not wait for them.
func (h *hostState) stop() { h.endQuit() }

// SetWatchInterval sets how often the remote manifest is read while a
// client watches it; zero or negative keeps DefaultWatchInterval.
func (s *Server) SetWatchInterval(d time.Duration) {
	if d > 0 {
		s.host.mu.Lock()
		s.host.watchEvery = d
		s.host.mu.Unlock()
	}
}

func (h *hostState) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.Seq, e.At = h.next, time.Now().UTC()
	h.next++
	if len(h.events) == eventRing {
		copy(h.events, h.events[1:])
		h.events = h.events[:eventRing-1]
	}
	h.events = append(h.events, e)
	close(h.wake)
	h.wake = make(chan struct{})
}

// publishProgress puts one operation's progress on the event stream.
func (s *Server) publishProgress(p syncer.Progress) {
	s.host.publish(Event{Type: EventProgress, Op: p.Op, Phase: p.Phase, Path: p.Path, Bytes: p.Bytes,
		Done: p.Done, Total: p.Total, DoneBytes: p.DoneBytes, TotalBytes: p.TotalBytes})
}

// opStarted and opEnded publish an operation's start and end, and note the
// manifest sequence a result carries, so the watcher can tell this cache's
// own commits from others'.
func (s *Server) opStarted(j *job) {
	s.host.publish(Event{Type: EventOp, Op: j.Op, JobID: j.ID, State: "started"})
}

func (s *Server) opEnded(j *job, res any, err error) {
	var seq uint64
	switch r := res.(type) {
	case syncer.Stats:
		seq = r.Seq
	case Stats:
		seq = r.Seq
	case PrepareResponse:
		seq = r.Stats.Seq
	case HydrateResponse:
		seq = r.Stats.Seq
	}
	state := JobSucceeded
	switch {
	case errors.Is(err, context.Canceled):
		state = JobCanceled
	case err != nil:
		state = JobFailed
	}
	s.host.mu.Lock()
	s.host.seenSeq = max(s.host.seenSeq, seq)
	s.host.mu.Unlock()
	s.host.publish(Event{Type: EventOp, Op: j.Op, JobID: j.ID, State: state})
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	var req EventsRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.WaitMs < 0 || req.WaitMs > maxEventWaitMs {
		writeError(w, badRequest("waitMs must be between 0 and %d", maxEventWaitMs))
		return
	}
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if req.WaitMs == 0 {
		wait = defaultEventWaitMs * time.Millisecond
	}
	if req.Remote {
		s.watch(wait)
	}
	if req.Tail {
		s.host.mu.Lock()
		next := s.host.next
		s.host.mu.Unlock()
		writeJSON(w, http.StatusOK, EventsResponse{Events: []Event{}, Next: next})
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		h := &s.host
		h.mu.Lock()
		out := EventsResponse{Events: []Event{}, Next: max(req.After, 1)}
		if req.After >= h.next {
			out.Next = h.next // a poll from a previous run of the service starts afresh
		}
		for _, e := range h.events {
			if e.Seq >= out.Next {
				out.Events = append(out.Events, e)
			}
		}
		if len(h.events) > 0 && h.events[0].Seq > out.Next {
			out.Dropped = h.events[0].Seq - out.Next
		}
		if len(out.Events) > 0 {
			out.Next = out.Events[len(out.Events)-1].Seq + 1
		}
		wake := h.wake
		h.mu.Unlock()
		if len(out.Events) > 0 || out.Dropped > 0 {
			writeJSON(w, http.StatusOK, out)
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			writeJSON(w, http.StatusOK, out)
			return
		case <-r.Context().Done():
			return
		case <-h.quit.Done():
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
}

// watch keeps the remote watcher running for at least d more (plus two
// intervals, so back-to-back polls keep it alive without a gap).
func (s *Server) watch(d time.Duration) {
	h := &s.host
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watchUntil = time.Now().Add(d + 2*h.watchEvery)
	select {
	case <-h.quit.Done():
		return // shutting down: no new watcher
	default:
	}
	if h.watching {
		return
	}
	h.watching = true
	s.running.Add(1)
	go s.watchLoop()
}

// watchLoop reads the manifest with If-None-Match on the version it saw
// last: one request per interval, answered "not modified" while nothing
// moved. It stops when no client has asked to watch for a while.
func (s *Server) watchLoop() {
	defer s.running.Done()
	h := &s.host
	for first := true; ; first = false {
		h.mu.Lock()
		if time.Now().After(h.watchUntil) {
			h.watching = false
			h.mu.Unlock()
			return
		}
		every, ver := h.watchEvery, h.lastRemote
		h.mu.Unlock()
		if !first {
			if backoff.Sleep(h.quit, every) != nil {
				h.mu.Lock()
				h.watching = false
				h.mu.Unlock()
				return
			}
		}
		s.pollRemote(first, ver)
	}
}

// pollRemote is one conditional read of the manifest; a move publishes a
// remote event. The first read of a watch only sets the baseline, unless
// the remote is ahead of what this cache last saw.
func (s *Server) pollRemote(first bool, ver string) {
	opts := backend.GetOptions{}
	if ver != "" {
		opts.IfNoneMatch = backend.Version(ver)
	}
	head, err := index.ReadManifest(s.base, s.root, opts)
	if err != nil {
		return // not modified, or unreachable: nothing to tell
	}
	h := &s.host
	h.mu.Lock()
	moved := string(head.Version) != h.lastRemote
	h.lastRemote, h.remoteSeq = string(head.Version), head.Manifest.Seq
	seen := h.seenSeq
	h.mu.Unlock()
	if s.sync == nil {
		seen = 0 // a bucket service has no cache: every move is news
	}
	if !moved || (first && (s.sync == nil || head.Manifest.Seq <= seen)) {
		return
	}
	s.host.publish(Event{Type: EventRemote, RemoteSeq: head.Manifest.Seq, SeenSeq: seen,
		Foreign: s.sync == nil || head.Manifest.Seq > seen})
}
