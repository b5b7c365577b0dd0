package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siltsync/silt/backend"
)

// Report is what Conditional found. The booleans are true only when the
// behaviour was observed, not merely claimed.
type Report struct {
	// IfNoneMatch: a second create-if-absent of an existing key failed
	// with ErrPrecondition and left the object as it was.
	IfNoneMatch bool
	// IfMatch: a write with the current version succeeded with a new
	// version, and writes with a stale version, or to a missing key,
	// failed with ErrPrecondition.
	IfMatch bool
	// ConditionalDelete: a delete with a stale version failed with
	// ErrPrecondition and one with the current version succeeded. It is
	// checked only when Capabilities claims it.
	ConditionalDelete bool
	// Problems describes each deviation, in plain words, for a user to
	// read; empty means every claimed capability held.
	Problems []string
	// Latency is the mean round trip of the probe's requests, a rough
	// figure for how long one commit's conditional write takes.
	Latency time.Duration
}

// OK reports whether the probe found no problem.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Conditional probes b's conditional writes on scratchKey, and on
// scratchKey+".absent" for If-Match on a missing key. Neither key may
// exist: the probe refuses to overwrite data. Both are deleted before it
// returns, whatever happened. The error is for failures that stopped the
// probe (network, permissions, an existing key); deviations go in
// Report.Problems.
func Conditional(ctx context.Context, b backend.Backend, scratchKey string) (rep Report, err error) {
	p := &prober{b: b, key: scratchKey, rep: &rep}
	absent := scratchKey + ".absent"
	for _, k := range []string{scratchKey, absent} {
		if err := backend.ValidateKey(k); err != nil {
			return rep, err
		}
		switch _, err := p.stat(ctx, k); {
		case err == nil:
			return rep, fmt.Errorf("probe: scratch key %q already exists; delete it or choose another", k)
		case !backend.IsNotExist(err):
			return rep, fmt.Errorf("probe: stat scratch key: %w", err)
		}
	}
	defer func() {
		// Clean up even when the caller's context has ended.
		cctx := context.WithoutCancel(ctx)
		for _, k := range []string{scratchKey, absent} {
			if derr := b.Delete(cctx, k, backend.Cond{}); derr != nil {
				err = errors.Join(err, fmt.Errorf("probe: clean up %q: %w", k, derr))
			}
		}
		rep.Latency = p.mean()
	}()

	caps := b.Capabilities()
	if !caps.AtomicCreate && !caps.ConditionalPut {
		return rep, nil // nothing claimed, nothing to verify
	}
	first, err := p.put(ctx, scratchKey, backend.Cond{IfAbsent: true})
	switch {
	case errors.Is(err, backend.ErrNotSupported):
		p.problem("does not support create-if-absent (Put with IfAbsent): %v", err)
		return rep, nil
	case backend.IsPrecondition(err):
		p.problem("refuses create-if-absent of a key that Stat says does not exist")
		return rep, nil
	case err != nil:
		return rep, fmt.Errorf("probe: first write: %w", err)
	}
	cur := first.Version

	// A second create must fail and must not change the object.
	switch v, err := p.put(ctx, scratchKey, backend.Cond{IfAbsent: true}); {
	case err == nil:
		p.problem("ignores If-None-Match: a second create-if-absent overwrote the object")
		cur = v.Version
	case backend.IsPrecondition(err):
		rep.IfNoneMatch = true
	default:
		return rep, fmt.Errorf("probe: second create-if-absent: %w", err)
	}
	if !caps.ConditionalPut {
		return rep, nil
	}

	// Compare-and-swap with the current version, which yields a stale one
	// to test with: a made-up version could be rejected for its format.
	stale := cur
	switch v, err := p.put(ctx, scratchKey, backend.Cond{IfMatch: cur}); {
	case errors.Is(err, backend.ErrNotSupported) || backend.IsPrecondition(err):
		p.problem("rejects If-Match with the current version: %v", err)
		return rep, nil
	case err != nil:
		return rep, fmt.Errorf("probe: write with current version: %w", err)
	case v.Version == cur:
		p.problem("returned an unchanged version %q after writing different bytes", v.Version)
		return rep, nil
	default:
		cur = v.Version
	}
	ifMatch := true
	switch v, err := p.put(ctx, scratchKey, backend.Cond{IfMatch: stale}); {
	case err == nil:
		p.problem("ignores If-Match: a write with a stale version succeeded")
		ifMatch, cur = false, v.Version
	case !backend.IsPrecondition(err):
		return rep, fmt.Errorf("probe: write with stale version: %w", err)
	}
	switch _, err := p.put(ctx, absent, backend.Cond{IfMatch: cur}); {
	case err == nil:
		p.problem("ignores If-Match on a missing key: the write created it")
		ifMatch = false
	case !backend.IsPrecondition(err):
		// AWS answers 404 here; a backend must map it to ErrPrecondition.
		p.problem("If-Match on a missing key fails with %v, not ErrPrecondition", err)
		ifMatch = false
	}
	rep.IfMatch = ifMatch

	if caps.ConditionalDelete {
		return rep, p.conditionalDelete(ctx, stale, cur)
	}
	return rep, nil
}

// conditionalDelete checks Delete with IfMatch; the object is at cur.
func (p *prober) conditionalDelete(ctx context.Context, stale, cur backend.Version) error {
	switch err := p.del(ctx, backend.Cond{IfMatch: stale}); {
	case err == nil:
		p.problem("ignores If-Match on DELETE: a delete with a stale version removed the object (set conditional_delete=false)")
		return nil
	case !backend.IsPrecondition(err):
		return fmt.Errorf("probe: delete with stale version: %w", err)
	}
	if err := p.del(ctx, backend.Cond{IfMatch: cur}); err != nil {
		p.problem("refuses DELETE with the current version: %v", err)
		return nil
	}
	switch _, err := p.stat(ctx, p.key); {
	case err == nil:
		p.problem("a conditional delete succeeded but the object is still there")
	case !backend.IsNotExist(err):
		return fmt.Errorf("probe: stat after delete: %w", err)
	default:
		p.rep.ConditionalDelete = true
	}
	return nil
}

// prober times every request and numbers every write, so no two writes
// carry the same bytes (an ETag of equal bytes would look unchanged).
type prober struct {
	b      backend.Backend
	key    string
	rep    *Report
	n      int
	total  time.Duration
	writes int
}

func (p *prober) timed(f func()) {
	start := time.Now()
	f()
	p.total += time.Since(start)
	p.n++
}

func (p *prober) mean() time.Duration {
	if p.n == 0 {
		return 0
	}
	return p.total / time.Duration(p.n)
}

func (p *prober) problem(format string, args ...any) {
	p.rep.Problems = append(p.rep.Problems, fmt.Sprintf(format, args...))
}

func (p *prober) put(ctx context.Context, key string, cond backend.Cond) (v backend.ObjectInfo, err error) {
	p.writes++
	data := fmt.Appendf(nil, "silt capability probe, write %d at %s", p.writes, time.Now().Format(time.RFC3339Nano))
	p.timed(func() { v, err = backend.PutBytes(ctx, p.b, key, data, cond) })
	return v, err
}

func (p *prober) stat(ctx context.Context, key string) (v backend.ObjectInfo, err error) {
	p.timed(func() { v, err = p.b.Stat(ctx, key) })
	return v, err
}

func (p *prober) del(ctx context.Context, cond backend.Cond) (err error) {
	p.timed(func() { err = p.b.Delete(ctx, p.key, cond) })
	return err
}
