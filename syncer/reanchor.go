package syncer

import (
	"context"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// Reanchor says how a pull with PullOptions.Reanchor moved the highest
// manifest this cache had seen.
type Reanchor struct {
	From uint64 `json:"from"` // the seq this cache had seen
	To   uint64 `json:"to"`   // the seq of the manifest it took instead
	// Forked is true when From equals To but the bytes differed (two
	// manifests of one seq).
	Forked bool `json:"forked,omitempty"`
}

// reanchor reads the manifest without comparing it with what this cache
// saw, and makes it the highest seen: rollback detection then starts
// again from the bucket's real history. It is only ever asked for.
func (s *Syncer) reanchor(ctx context.Context, o *op, b backend.Backend) (index.Head, error) {
	h, err := index.ReadManifest(ctx, b, backend.GetOptions{})
	if err != nil {
		return h, err
	}
	seq, hash := h.Manifest.Seq, manifestHash(h.Data)
	if h.Version == "" {
		seq, hash = 0, ""
	}
	s.rmu.Lock()
	old := s.seen
	s.seen = seen{seq: seq, hash: hash}
	s.mcache = manifestCache{data: h.Data, version: h.Version, seq: seq, carry: h.Carry()}
	s.rmu.Unlock()
	if old.seq != seq || old.hash != hash {
		o.stats.Reanchor = &Reanchor{From: old.seq, To: seq, Forked: old.seq == seq}
	}
	return h, nil
}
