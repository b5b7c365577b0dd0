package serve

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
)

// Health is the result of GET /v1/health, in the shape of the host's
// DatastoreHealthResult: a read-only check costing one request (a read of
// the manifest) and no write. `silt verify` is the deep check, which
// writes scratch keys and reads every shard.
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
	head, err := index.ReadManifest(r.Context(), cb, backend.GetOptions{})
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

// namespace is the namespace the service is bound to ("" for solo).
func (s *Server) namespace() string { return s.cfg.Syncer.Namespace }
