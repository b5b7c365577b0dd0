package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

// WatchRequest is the body of POST /v1/watch: the watch.Options of the
// watch, durations in milliseconds (0: the default; a negative poll or
// walk: never).
type WatchRequest struct {
	PollMs       int64    `json:"pollMs,omitempty"`
	DebounceMs   int64    `json:"debounceMs,omitempty"`
	MaxWaitMs    int64    `json:"maxWaitMs,omitempty"`
	WalkMs       int64    `json:"walkMs,omitempty"`
	MaxBackoffMs int64    `json:"maxBackoffMs,omitempty"`
	NoNotify     bool     `json:"noNotify,omitempty"`
	MaxDelete    int      `json:"maxDelete,omitempty"`
	Exclude      []string `json:"exclude,omitempty"`
	Include      []string `json:"include,omitempty"`
	// Idle also streams the steps that changed nothing (a poll a second
	// that found the manifest unchanged); without it they are left out.
	Idle bool `json:"idle,omitempty"`
}

// WatchResult is the result line of POST /v1/watch: the watch stopped
// cleanly (the client went away, its job was cancelled, or the service
// shut down).
type WatchResult struct {
	Job     string `json:"job"`
	Stopped bool   `json:"stopped"`
}

func (req WatchRequest) options() (watch.Options, error) {
	if req.DebounceMs < 0 || req.MaxWaitMs < 0 || req.MaxBackoffMs < 0 || req.MaxDelete < 0 {
		return watch.Options{}, badRequest("debounceMs, maxWaitMs, maxBackoffMs and maxDelete must not be negative")
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	return watch.Options{Poll: ms(req.PollMs), Debounce: ms(req.DebounceMs), MaxWait: ms(req.MaxWaitMs),
		Walk: ms(req.WalkMs), MaxBackoff: ms(req.MaxBackoffMs), NoNotify: req.NoNotify,
		MaxDelete: req.MaxDelete, Exclude: req.Exclude, Include: req.Include}, nil
}

// handleWatch runs a watch of the served cache for as long as the client
// reads its stream: always a streamed reply, {"watch": Event} per step
// and {"change": Change} per file, as the other streams. It is a job
// (GET /v1/jobs lists it, its cancel stops it), and the service's
// shutdown stops it too, so a long-lived stream never holds Shutdown.
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	var req WatchRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	opts, err := req.options()
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		writeError(w, errUnavailable)
		return
	}
	j, ctx := s.jobs.start(r.Context(), "watch", "watch")
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.host.quit, cancel)()

	st := newStreamer(w)
	obs := CallOptions{}.observer(st.emitter())
	obs.Progress = func(p syncer.Progress) {
		s.jobs.progressOf(j, p)
		s.publishProgress(p)
	}
	ctx = syncer.WithObserver(ctx, obs)
	opts.OnEvent = func(e watch.Event) {
		if e.Stats != nil {
			s.noteSeq(e.Stats.Seq)
		}
		if req.Idle || e.Changed() {
			st.write(event{Watch: &e})
		}
	}
	s.opStarted(j)
	err = watch.Run(ctx, s.sync, opts)
	res := WatchResult{Job: j.ID, Stopped: err == nil}
	s.jobs.finish(j, res, err)
	s.opEnded(j, res, err)
	st.end(res, err)
}

// noteSeq keeps the highest manifest seq this cache saw, as opEnded does
// for one operation: the remote watcher tells a watch's own commits from
// others' by it.
func (s *Server) noteSeq(seq uint64) {
	s.host.mu.Lock()
	s.host.seenSeq = max(s.host.seenSeq, seq)
	s.host.mu.Unlock()
}

// Watch runs a watch of the served cache (POST /v1/watch) until ctx ends,
// calling onEvent with each of its events (and, from ctx's
// syncer.Observer, OnChange with each file); a clean stop is nil. It
// returns an error only when the stream cannot start or the service ends
// it with one.
func (c *Client) Watch(ctx context.Context, req WatchRequest, onEvent func(watch.Event)) error {
	const path = "/v1/watch"
	resp, err := c.openStream(ctx, path, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	obs := syncer.ObserverOf(ctx)
	dec := json.NewDecoder(resp.Body)
	for {
		var e event
		if err := dec.Decode(&e); err != nil {
			if ctx.Err() != nil {
				return nil // the stop asked for: the service stops the watch as the stream closes
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("serve: read reply of %s: %w", path, err)
		}
		switch {
		case e.Watch != nil:
			if onEvent != nil {
				onEvent(*e.Watch)
			}
		case e.Change != nil:
			if obs.OnChange != nil {
				obs.OnChange(*e.Change)
			}
		case e.Error != nil:
			e.Error.Status = statusOf(e.Error.Code)
			return e.Error
		case e.Result != nil:
			return nil
		}
	}
}
