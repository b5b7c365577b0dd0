package syncer

import (
	"context"
	"errors"

	"github.com/siltsync/silt/backend"
)

var errPending = errors.New("syncer: not implemented yet")

// Preview counts what a push would send, from local state alone.
type Preview struct {
	New     int `json:"new"`
	Changed int `json:"changed"`
	Deleted int `json:"deleted"`
	Total   int `json:"total"`
}

// PreviewPush counts new, changed and deleted files without a request.
func (s *Syncer) PreviewPush(ctx context.Context) (Preview, error) { return Preview{}, errPending }

// Status is what `silt status` shows.
type Status struct {
	Dirty       []string `json:"dirty"`        // marked paths
	Overflow    bool     `json:"overflow"`     // the mark set overflowed
	Bulk        bool     `json:"bulk"`         // MarkAllDirty is pending
	Pending     Preview  `json:"pending"`      // what a push would send
	SeenSeq     uint64   `json:"seen_seq"`     // last manifest seq this cache read or wrote
	RemoteSeq   uint64   `json:"remote_seq"`   // current remote seq (when asked)
	RemoteMoved bool     `json:"remote_moved"` // RemoteSeq != SeenSeq
}

// Status reports pending local changes and, with remote, whether the
// remote index moved since this cache last read it (one request).
func (s *Syncer) Status(ctx context.Context, remote bool) (Status, error) {
	return Status{}, errPending
}

// HydrateFile downloads one lazily pulled file atomically. It returns false
// when the path has no committed entry.
func (s *Syncer) HydrateFile(ctx context.Context, path string) (bool, Stats, error) {
	return false, Stats{}, errPending
}

// PushManifest is a prepared push: uploaded, not committed. It marshals to
// JSON so a host may commit it from another process.
type PushManifest struct{}

// PreparePush uploads what changed and returns the manifest to commit.
func (s *Syncer) PreparePush(ctx context.Context, opts PushOptions) (*PushManifest, Stats, error) {
	return nil, Stats{}, errPending
}

// CommitPush commits a prepared push by compare-and-swap; retrying it with
// the same manifest is harmless.
func (s *Syncer) CommitPush(ctx context.Context, pm *PushManifest, fence *Fence) (Stats, error) {
	return Stats{}, errPending
}

// Control returns the namespace's control-plane store: small records under
// .silt/control/ that bypass the index and the cache.
func (s *Syncer) Control() *Control { return &Control{b: s.root} }

// Control is a small key-value store in the bucket.
type Control struct{ b backend.Backend }

// Namespaces lists the namespaces registered in the bucket.
func Namespaces(ctx context.Context, b backend.Backend) ([]string, error) { return nil, errPending }

// VerifyResult is a health report of a store.
type VerifyResult struct {
	Healthy   bool              `json:"healthy"`
	Message   string            `json:"message"`
	LatencyMs float64           `json:"latency_ms"`
	Type      string            `json:"type"`
	Details   map[string]string `json:"details,omitempty"`
}

// Verify probes the store: reachable, and honouring create-if-absent and
// compare-and-swap on a scratch key it removes.
func Verify(ctx context.Context, b backend.Backend) VerifyResult {
	return VerifyResult{Message: errPending.Error()}
}
