package backend

import (
	"context"
	"fmt"
	"io"
)

// UnderLock returns b for a caller that holds an exclusive lock over every
// writer of b (a commit lock). On a store with neither compare-and-swap
// nor atomic create, a Put with Cond{IfAbsent} becomes a Stat, then an
// unconditional Put, and one with Cond{IfMatch} a Stat that compares the
// version, then an unconditional Put: nothing races them while the lock
// is held, so the one format's create-if-absent commit, and a migration's
// compare-and-swap of an older format's manifest, work there, serialised
// by the lock. Its Capabilities then claim both. On any other store it
// returns b as it is.
func UnderLock(b Backend) Backend {
	if caps := b.Capabilities(); caps.ConditionalPut || caps.AtomicCreate {
		return b
	}
	return underLock{b}
}

type underLock struct{ Backend }

func (u underLock) Capabilities() Capabilities {
	c := u.Backend.Capabilities()
	c.AtomicCreate, c.ConditionalPut = true, true
	return c
}

func (u underLock) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	if cond.IfAbsent {
		_, err := u.Backend.Stat(ctx, key)
		switch {
		case err == nil:
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, ErrPrecondition)
		case !IsNotExist(err):
			return ObjectInfo{}, err
		}
		cond.IfAbsent = false
	}
	if cond.IfMatch != "" {
		info, err := u.Backend.Stat(ctx, key)
		switch {
		case IsNotExist(err) || err == nil && info.Version != cond.IfMatch:
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, ErrPrecondition)
		case err != nil:
			return ObjectInfo{}, err
		}
		cond.IfMatch = ""
	}
	return u.Backend.Put(ctx, key, body, size, cond)
}
