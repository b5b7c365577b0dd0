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
	// Probe is what the sequential probe of conditional writes observed.
	Probe probe.Report `json:"probe"`
	// Race is what VerifyRacers concurrent compare-and-swap writers
	// observed (zero when the store claims no compare-and-swap).
	Race probe.RaceReport `json:"race"`
	// Seq, Shards and Entries describe the current index, every shard of
	// which was read and checked against its hash.
	Seq     uint64 `json:"seq"`
	Shards  int    `json:"shards"`
	Entries int    `json:"entries"`
	// Problems lists every deviation found, in plain words.
	Problems []string `json:"problems"`
}

// VerifyRacers and VerifyIncrements size Verify's compare-and-swap race:
// the conformance suite's race, bounded to a few seconds on a remote store.
const (
	VerifyRacers     = 16
	VerifyIncrements = 3
)

// Verify checks, on scratch keys it removes, that the store answers, that
// it honours create-if-absent and compare-and-swap (a sequential probe,
// then VerifyRacers writers racing on one key: a store whose If-Match is
// not atomic loses updates only under contention), and that every shard
// of the namespace root b's current index is readable and matches its
// hash. A store that silently ignores conditions is caught at setup, not
// by lost updates. An error is returned only when the index cannot be
// read at all; store deviations go in Problems.
func Verify(ctx context.Context, b backend.Backend) (VerifyResult, error) {
	start := time.Now()
	res := VerifyResult{Type: fmt.Sprintf("%T", backend.Base(b)), Details: map[string]string{}, Problems: []string{}}
	caps := b.Capabilities()
	res.Details["conditional_put"] = fmt.Sprint(caps.ConditionalPut)
	res.Details["conditional_delete"] = fmt.Sprint(caps.ConditionalDelete)
	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		return res, fmt.Errorf("read the index: %w", err)
	}
	m := snap.Manifest()
	res.Seq, res.Shards = m.Seq, len(m.Shards)
	if err := snap.Walk(ctx, "", func(string, index.Entry) error { res.Entries++; return nil }); err != nil {
		return res, fmt.Errorf("read the index shards: %w", err)
	}
	scratch := fmt.Sprintf("%sverify/%d", index.ControlPrefix, time.Now().UnixNano())
	res.Probe, err = probe.Conditional(ctx, b, scratch)
	res.LatencyMs = ms(time.Since(start))
	if err != nil {
		res.Message = "store unreachable or refusing writes: " + err.Error()
		res.Problems = append(res.Problems, res.Message)
		return res, nil
	}
	res.Problems = append(res.Problems, res.Probe.Problems...)
	switch {
	case !caps.ConditionalPut && !caps.AtomicCreate:
		res.Problems = append(res.Problems, "claims neither create-if-absent nor compare-and-swap")
	case !caps.ConditionalPut:
		res.Problems = append(res.Problems, "has no compare-and-swap (If-Match): silt push cannot commit to it")
	case res.Probe.IfMatch:
		res.Race, err = probe.Race(ctx, b, scratch+".race", VerifyRacers, VerifyIncrements)
		switch {
		case err != nil:
			res.Problems = append(res.Problems, "compare-and-swap race: "+err.Error())
		case !res.Race.OK():
			res.Problems = append(res.Problems, fmt.Sprintf("lost %d of %d compare-and-swap updates with %d concurrent writers: its If-Match is not atomic",
				res.Race.Want-res.Race.Got, res.Race.Want, res.Race.Writers))
		}
	}
	res.LatencyMs = ms(time.Since(start))
	if len(res.Problems) > 0 {
		res.Message = "store does not keep silt's contract: " + strings.Join(res.Problems, "; ")
		return res, nil
	}
	res.Healthy = true
	res.Message = "ok: reachable, index readable, create-if-absent and compare-and-swap honoured under contention"
	return res, nil
}
