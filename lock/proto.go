package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/siltsync/silt/backend"
)

// protocol is what differs between backends with compare-and-swap and
// those with only create-if-absent. Acquire, the heartbeat loop and the
// staleness rule are shared.
type protocol interface {
	// claim replaces the observed state (absent, released, stale, or an
	// earlier claim of this acquisition) with rec, whose Token is the
	// lowest acceptable token. It returns the new version and the token
	// granted. ErrPrecondition means another claimant got there first.
	claim(ctx context.Context, obs observed, rec record) (backend.Version, uint64, error)
	// beat rewrites rec over ver, the version this holder wrote last. It
	// returns ErrLost when the lock is no longer held under rec.Nonce.
	beat(ctx context.Context, ver backend.Version, rec record) (backend.Version, error)
	// release frees the lock if it is still held under rec.Nonce, trying
	// ver first when it is not empty, and reports whether it freed it.
	release(ctx context.Context, ver backend.Version, rec record) (bool, error)
}

// settleTries bounds the re-reads after a failed conditional write. Each
// one needs the object to have moved while still carrying our nonce, which
// only a delayed write of our own can do, so more than one is rare.
const settleTries = 4

var errUnsettled = errors.New("lock object kept changing under a write of ours")

// casProto never deletes the lock object: release leaves a released
// record carrying the last token, so the next claim can continue the
// sequence by compare-and-swap.
type casProto struct{ l *Lock }

func (p casProto) claim(ctx context.Context, obs observed, rec record) (backend.Version, uint64, error) {
	cond := backend.Cond{IfAbsent: true}
	if obs.rec != nil {
		cond = backend.Cond{IfMatch: obs.version}
	}
	info, err := p.l.write(ctx, p.l.key, rec, cond)
	return info.Version, rec.Token, err
}

func (p casProto) beat(ctx context.Context, ver backend.Version, rec record) (backend.Version, error) {
	for range settleTries {
		info, err := p.l.write(ctx, p.l.key, rec, backend.Cond{IfMatch: ver})
		if !backend.IsPrecondition(err) {
			return info.Version, err
		}
		// The version moved: a takeover, or an earlier beat of ours
		// whose reply was lost. Reading settles which; replaying blindly
		// could not.
		obs, err := p.l.read(ctx)
		if err != nil {
			return "", err
		}
		if !obs.heldBy(rec.Nonce) {
			return "", ErrLost
		}
		ver = obs.version
	}
	return "", errUnsettled
}

func (p casProto) release(ctx context.Context, ver backend.Version, rec record) (bool, error) {
	gone := record{Format: format, Released: true, Token: rec.Token}
	for range settleTries {
		if ver != "" {
			_, err := p.l.write(ctx, p.l.key, gone, backend.Cond{IfMatch: ver})
			if !backend.IsPrecondition(err) {
				return err == nil, err
			}
		}
		obs, err := p.l.read(ctx)
		if err != nil {
			return false, err
		}
		if !obs.heldBy(rec.Nonce) {
			return false, nil // released already, or someone else's now: leave it alone
		}
		ver, gone.Token = obs.version, obs.rec.Token
	}
	return false, errUnsettled
}

// fenceSuffix names the token counter kept beside the lock object by
// createProto, which deletes the lock object on release and so cannot
// keep the last token in it.
const fenceSuffix = ".fence"

type fence struct {
	Format int    `json:"format"`
	Token  uint64 `json:"token"`
}

// createProto serves backends with create-if-absent but no
// compare-and-swap. Every check-then-write in it has a window in which
// another client can act; the package documentation lists what follows.
type createProto struct {
	l          *Lock
	condDelete bool // Delete honours IfMatch: a takeover cannot delete a lock that moved on
}

func (p createProto) deleteCond(ver backend.Version) backend.Cond {
	if p.condDelete {
		return backend.Cond{IfMatch: ver}
	}
	return backend.Cond{}
}

func (p createProto) claim(ctx context.Context, obs observed, rec record) (backend.Version, uint64, error) {
	if obs.rec != nil {
		if err := p.l.b.Delete(ctx, p.l.key, p.deleteCond(obs.version)); err != nil {
			return "", 0, err
		}
	}
	floor := rec.Token
	rec.Token = 0 // until the counter grants one
	info, err := p.l.write(ctx, p.l.key, rec, backend.Cond{IfAbsent: true})
	if err != nil {
		return "", 0, err
	}
	// The counter is read only once the lock is ours, so two claimants
	// cannot both read the same value, short of a takeover of a paused one.
	tok, err := p.nextToken(ctx, floor)
	ver := info.Version
	if err == nil {
		rec.Token = tok
		ver, err = p.beat(ctx, info.Version, rec)
	}
	if err != nil {
		// Give the lock back rather than leave it held by nobody for a TTL.
		_, rerr := p.release(context.WithoutCancel(ctx), info.Version, rec)
		return "", 0, errors.Join(err, rerr)
	}
	return ver, tok, nil
}

func (p createProto) nextToken(ctx context.Context, floor uint64) (uint64, error) {
	key := p.l.key + fenceSuffix
	var last fence
	data, _, err := backend.ReadAll(ctx, p.l.b, key, backend.GetOptions{}, maxRecordSize)
	switch {
	case backend.IsNotExist(err):
	case err != nil:
		return 0, err
	default:
		if err := json.Unmarshal(data, &last); err != nil || last.Format != format {
			return 0, fmt.Errorf("lock %q: fencing counter: %w", p.l.key, ErrFormat)
		}
	}
	next := fence{Format: format, Token: max(last.Token+1, floor)}
	if _, err := p.l.write(ctx, key, next, backend.Cond{}); err != nil {
		return 0, err
	}
	return next.Token, nil
}

func (p createProto) beat(ctx context.Context, _ backend.Version, rec record) (backend.Version, error) {
	obs, err := p.l.read(ctx)
	if err != nil {
		return "", err
	}
	if !obs.heldBy(rec.Nonce) {
		return "", ErrLost
	}
	info, err := p.l.write(ctx, p.l.key, rec, backend.Cond{})
	return info.Version, err
}

func (p createProto) release(ctx context.Context, _ backend.Version, rec record) (bool, error) {
	for range settleTries {
		obs, err := p.l.read(ctx)
		if err != nil {
			return false, err
		}
		if !obs.heldBy(rec.Nonce) {
			return false, nil
		}
		err = p.l.b.Delete(ctx, p.l.key, p.deleteCond(obs.version))
		if !backend.IsPrecondition(err) {
			return err == nil, err
		}
	}
	return false, errUnsettled
}
