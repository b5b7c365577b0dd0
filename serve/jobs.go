package serve

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/siltsync/silt/syncer"
)

// maxJobs bounds the finished jobs kept, whatever their age.
const maxJobs = 1000

// job is one operation, synchronous or async. Synchronous ones are tracked
// too, so progress can be told apart and /v1/jobs shows everything running.
type job struct {
	Job
	kind   string // the syncer's Progress.Op for this operation
	cancel context.CancelFunc
}

// jobTable holds the jobs and routes the Syncer's progress to them.
type jobTable struct {
	mu        sync.Mutex
	retention time.Duration
	byID      map[string]*job
	order     []*job // by start
}

func (t *jobTable) init(retention time.Duration) {
	t.retention = retention
	t.byID = map[string]*job{}
}

func (t *jobTable) start(parent context.Context, op, kind string) (*job, context.Context) {
	ctx, cancel := context.WithCancel(parent)
	j := &job{Job: Job{ID: rand.Text()[:16], Op: op, State: JobRunning, StartedAt: time.Now()}, kind: kind, cancel: cancel}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prune(time.Now())
	t.byID[j.ID] = j
	t.order = append(t.order, j)
	return j, ctx
}

func (t *jobTable) finish(j *job, res any, err error) {
	var raw json.RawMessage
	if err == nil {
		data, merr := json.Marshal(res)
		raw, err = data, merr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	j.cancel()
	j.FinishedAt = time.Now()
	switch {
	case err == nil:
		j.State, j.Result = JobSucceeded, raw
	case errors.Is(err, context.Canceled):
		j.State = JobCanceled
		j.Error, _ = toError(err)
	default:
		j.State = JobFailed
		j.Error, _ = toError(err)
	}
}

// prune drops finished jobs past the retention, and the oldest finished
// ones past maxJobs. Running jobs are never dropped.
func (t *jobTable) prune(now time.Time) {
	finished := 0
	for _, j := range t.order {
		if j.State != JobRunning {
			finished++
		}
	}
	kept := t.order[:0]
	for _, j := range t.order {
		old := j.State != JobRunning && (now.Sub(j.FinishedAt) > t.retention || finished > maxJobs)
		if old {
			finished--
			delete(t.byID, j.ID)
			continue
		}
		kept = append(kept, j)
	}
	clear(t.order[len(kept):])
	t.order = kept
}

func (t *jobTable) snapshot(j *job) Job {
	t.mu.Lock()
	defer t.mu.Unlock()
	return j.Job
}

func (t *jobTable) get(id string) (*job, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j, ok := t.byID[id]
	return j, ok
}

// progressOf counts one finished transfer of j's operation (the Syncer
// tells each call its own progress through the context's Observer).
func (t *jobTable) progressOf(j *job, p syncer.Progress) {
	if p.Phase == "check" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	j.Progress.Files = p.Done
	j.Progress.TotalFiles = p.Total
	j.Progress.Bytes = p.DoneBytes
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) {
	s.jobs.mu.Lock()
	s.jobs.prune(time.Now())
	out := make([]Job, 0, len(s.jobs.order))
	for _, j := range s.jobs.order {
		jj := j.Job
		jj.Result = nil // the list is a summary
		out = append(out, jj)
	}
	s.jobs.mu.Unlock()
	sort.SliceStable(out, func(a, b int) bool { return out[a].StartedAt.Before(out[b].StartedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	j, ok := s.jobs.get(r.PathValue("id"))
	if !ok {
		writeError(w, fmt.Errorf("%w: no job %q (finished jobs are kept %v)", errNotFound, r.PathValue("id"), s.jobs.retention))
		return
	}
	writeJSON(w, http.StatusOK, s.jobs.snapshot(j))
}

// handleJobCancel cancels a running job; the job ends as "canceled" once
// the operation notices, without leaving torn state (the Syncer's promise).
func (s *Server) handleJobCancel(w http.ResponseWriter, r *http.Request) {
	j, ok := s.jobs.get(r.PathValue("id"))
	if !ok {
		writeError(w, fmt.Errorf("%w: no job %q", errNotFound, r.PathValue("id")))
		return
	}
	j.cancel()
	writeJSON(w, http.StatusOK, s.jobs.snapshot(j))
}
