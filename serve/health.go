package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// Health is the result of GET /v1/health, in the shape of the host's
// DatastoreHealthResult: a read-only check, one request when the head is
// unchanged since the service last read it. `silt verify` is the deep
// check, which writes scratch keys and reads every shard.
type Health struct {
	Healthy       bool              `json:"healthy"`
	Message       string            `json:"message"`
	LatencyMs     float64           `json:"latencyMs"`
	DatastoreType string            `json:"datastoreType"`
	Details       map[string]string `json:"details"`
	// Requests counts what the check sent to the store (one GET).
	Requests RequestCount `json:"requests"`
}

// RequestCount is a health check's requests by verb.
type RequestCount struct {
	Get   int64 `json:"get"`
	Put   int64 `json:"put"`
	List  int64 `json:"list"`
	Stat  int64 `json:"stat"`
	Total int64 `json:"total"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	cb := wrap.Count(s.root)
	start := time.Now()
	head, err := s.readHead(r.Context(), cb)
	c := cb.Counts()
	out := Health{
		LatencyMs:     float64(time.Since(start).Microseconds()) / 1000,
		DatastoreType: fmt.Sprintf("%T", backend.Base(s.root)),
		Details:       map[string]string{"namespace": s.namespace()},
		Requests: RequestCount{Get: c.Get, Put: c.Put + c.CondPut, List: c.List, Stat: c.Stat,
			Total: c.Get + c.Put + c.CondPut + c.List + c.Stat + c.Delete},
	}
	if err != nil {
		out.Message = "store unreachable or index unreadable: " + err.Error()
		if e, _ := toError(err); e != nil {
			out.Details["code"] = e.Code
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	out.Healthy = true
	out.Details["seq"] = strconv.FormatUint(head.Manifest.Seq, 10)
	out.Message = fmt.Sprintf("ok: index readable at seq %d", head.Manifest.Seq)
	writeJSON(w, http.StatusOK, out)
}

// readHead reads the head through b: through the cache's syncer, or, for a
// bucket service, conditionally on the head the last check read, so that a
// check of an unchanged bucket is one request whatever its format and size.
func (s *Server) readHead(ctx context.Context, b backend.Backend) (index.Head, error) {
	if s.sync != nil {
		return s.sync.ReadHead(ctx, b)
	}
	s.mu.Lock()
	known := s.held
	s.mu.Unlock()
	var head index.Head
	var err error
	if known.IsLog() {
		head, err = index.ReadHeadSince(ctx, b, known, time.Now)
		if errors.Is(err, backend.ErrNotModified) {
			err = nil
		}
	} else {
		head, err = index.ReadManifest(ctx, b, backend.GetOptions{})
	}
	if err != nil {
		return head, err
	}
	s.mu.Lock()
	if s.held.Manifest == nil || head.Manifest.Seq >= s.held.Manifest.Seq {
		s.held = head
	}
	s.mu.Unlock()
	return head, nil
}

// namespace is the namespace the service is bound to ("" for solo).
func (s *Server) namespace() string { return s.cfg.Syncer.Namespace }
