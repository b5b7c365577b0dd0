package syncer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/probe"
	"github.com/siltsync/silt/index"
)

// Control is the namespace's control-plane store: small records under
// .silt/control/ that bypass the index and the cache (host bookkeeping such
// as run claims). Every call is one request, or one per List page.
type Control struct{ b backend.Backend }

// Control returns the control-plane store of the Syncer's namespace.
func (s *Syncer) Control() *Control { return NewControl(s.root) }

// NewControl returns the control-plane store of the namespace root b.
func NewControl(b backend.Backend) *Control { return &Control{b: b} }

// maxControlRecord bounds one control record.
const maxControlRecord = 16 << 20

func controlKey(key string) (string, error) {
	if err := backend.ValidateKey(key); err != nil {
		return "", err
	}
	return index.ControlPrefix + key, nil
}

// Get returns the record's bytes, or an error matching backend.ErrNotExist.
func (c *Control) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := controlKey(key)
	if err != nil {
		return nil, err
	}
	data, _, err := backend.ReadAll(ctx, c.b, k, backend.GetOptions{}, maxControlRecord)
	return data, err
}

// Put stores the record, replacing any other.
func (c *Control) Put(ctx context.Context, key string, data []byte) error {
	k, err := controlKey(key)
	if err != nil {
		return err
	}
	_, err = backend.PutBytes(ctx, c.b, k, data, backend.Cond{})
	return err
}

// PutIfAbsent stores the record only if none exists, and reports whether it
// did. It needs a store with atomic create-if-absent.
func (c *Control) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	k, err := controlKey(key)
	if err != nil {
		return false, err
	}
	if caps := c.b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		return false, fmt.Errorf("control: put-if-absent: %w", backend.ErrNotSupported)
	}
	_, err = backend.PutBytes(ctx, c.b, k, data, backend.Cond{IfAbsent: true})
	if backend.IsPrecondition(err) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the record; a missing record is not an error.
func (c *Control) Delete(ctx context.Context, key string) error {
	k, err := controlKey(key)
	if err != nil {
		return err
	}
	return c.b.Delete(ctx, k, backend.Cond{})
}

// List returns the keys that begin with prefix, sorted.
func (c *Control) List(ctx context.Context, prefix string) ([]string, error) {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	var keys []string
	err := c.b.List(ctx, index.ControlPrefix+prefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			keys = append(keys, strings.TrimPrefix(o.Key, index.ControlPrefix))
		}
		return nil
	})
	return keys, err
}

// VerifyResult is a store's health report.
type VerifyResult struct {
	Healthy   bool              `json:"healthy"`
	Message   string            `json:"message"`
	LatencyMs float64           `json:"latency_ms"`
	Type      string            `json:"type"`
	Details   map[string]string `json:"details,omitempty"`
}

// Verify checks that the store answers and that it honours create-if-absent
// and compare-and-swap, on a scratch key it removes, so a store that
// silently ignores conditions is caught at setup, not by lost updates.
func Verify(ctx context.Context, b backend.Backend) VerifyResult {
	start := time.Now()
	res := VerifyResult{Type: fmt.Sprintf("%T", backend.Base(b)), Details: map[string]string{}}
	caps := b.Capabilities()
	res.Details["conditional_put"] = fmt.Sprint(caps.ConditionalPut)
	res.Details["conditional_delete"] = fmt.Sprint(caps.ConditionalDelete)
	scratch := fmt.Sprintf("%sverify/%d", index.ControlPrefix, time.Now().UnixNano())
	rep, err := probe.Conditional(ctx, b, scratch)
	res.LatencyMs = ms(time.Since(start))
	switch {
	case err != nil:
		res.Message = "store unreachable or refusing writes: " + err.Error()
	case !rep.OK():
		res.Message = "store does not honour conditional writes: " + strings.Join(rep.Problems, "; ")
	default:
		res.Healthy = true
		res.Message = "ok: reachable, create-if-absent and compare-and-swap honoured"
	}
	return res
}
