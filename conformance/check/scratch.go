package check

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/siltsync/silt/backend"
)

// Scratch hands the checks of a live run fresh, empty views of one store,
// each under its own key prefix below a random scratch prefix, and removes
// them all afterwards. The views do not close the store: the caller does.
type Scratch struct {
	b      backend.Backend
	prefix string
	n      int
}

// NewScratch returns a Scratch on b under "silt-conformance-<random>/".
func NewScratch(b backend.Backend) *Scratch {
	return &Scratch{b: b, prefix: "silt-conformance-" + rand.Text()[:12] + "/"}
}

// Prefix is the scratch prefix every view lives under.
func (s *Scratch) Prefix() string { return s.prefix }

// Next returns the next empty view; it has the shape RunLive takes. It is
// not safe for concurrent use.
func (s *Scratch) Next() (backend.Backend, error) {
	s.n++
	return noClose{backend.Prefixed(s.b, fmt.Sprintf("%s%04d", s.prefix, s.n))}, nil
}

// Remove deletes everything the views wrote. It runs even when ctx is
// already cancelled (an interrupted run still cleans up after itself).
func (s *Scratch) Remove(ctx context.Context) error {
	if err := backend.RemovePrefix(context.WithoutCancel(ctx), s.b, s.prefix); err != nil {
		return fmt.Errorf("clean up %s: %w", s.prefix, err)
	}
	return nil
}

// noClose keeps the shared store open when a check closes its backend.
type noClose struct{ backend.Backend }

func (noClose) Close() error { return nil }
