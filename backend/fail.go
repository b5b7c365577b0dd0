package backend

import (
	"context"
	"fmt"
)

// The constructors below are the one way a driver states a failure of a
// known kind, so every store builds the same [*Error] for it: permanent,
// naming op and key, with the sentinel first in its message. cause, when
// not nil, says why (what the store answered) and stays reachable with
// errors.Is and errors.As.

// NotFound is the failure of op on key because the object does not exist
// ([ErrNotExist]).
func NotFound(op, key string, cause error) error { return kind(op, key, ErrNotExist, cause) }

// PreconditionFailed is the failure of op on key because its condition
// does not hold ([ErrPrecondition]).
func PreconditionFailed(op, key string, cause error) error {
	return kind(op, key, ErrPrecondition, cause)
}

// NotModified is a Get's answer that the object is still at the version
// GetOptions.IfNoneMatch names ([ErrNotModified]).
func NotModified(op, key string, cause error) error { return kind(op, key, ErrNotModified, cause) }

// InvalidRange is the failure of a ranged Get whose range does not lie
// inside the object ([ErrInvalidRange]).
func InvalidRange(op, key string, cause error) error { return kind(op, key, ErrInvalidRange, cause) }

func kind(op, key string, sentinel, cause error) error {
	if cause == nil {
		return &Error{Op: op, Key: key, Err: sentinel}
	}
	return &Error{Op: op, Key: key, Err: fmt.Errorf("%w: %w", sentinel, cause)}
}

// CheckBodySize is the one check, shared by every driver's Put, that the
// body held exactly the size the caller stated: n is what was read, with
// at most one byte past size. A mismatch is a permanent failure (the
// caller's bug, or a body that changed under it) and nothing is stored.
func CheckBodySize(key string, n, size int64) error {
	if n != size {
		return Permanent("put", key, fmt.Errorf("body has %d bytes, size says %d", n, size))
	}
	return nil
}

// RangeOutside is the [InvalidRange] failure of a Get of r from an object
// of size bytes, worded alike on every store.
func RangeOutside(op, key string, r Range, size int64) error {
	return InvalidRange(op, key, fmt.Errorf("offset %d length %d of a %d-byte object", r.Offset, r.Length, size))
}

// Statter is the one verb [StaleOrInvalid] needs of a driver.
type Statter interface {
	Stat(ctx context.Context, key string) (ObjectInfo, error)
}

// StaleOrInvalid settles a store's 416 answer to a ranged Get under
// GetOptions.IfMatch. S3 and GCS judge the condition first (412), but
// emulators and some compatible stores ignore read preconditions and
// answer 416 for a range outside the current object even when the
// caller's version is gone, and a 416 names no version. One Stat of the
// driver d, sent only on this error path, tells a stale version
// ([ErrPrecondition]) from a range outside the version asked for
// (invalid, returned as it is). want is the version asked for, in the
// form d's Stat reports.
func StaleOrInvalid(ctx context.Context, d Statter, key string, want Version, invalid error) error {
	cur, err := d.Stat(ctx, key)
	switch {
	case IsNotExist(err):
		return PreconditionFailed("get", key, fmt.Errorf("object is gone (the store answered: %v)", invalid))
	case err != nil:
		return invalid
	case cur.Version != want:
		return PreconditionFailed("get", key, fmt.Errorf("store is at version %s, want %s (it answered: %v)", cur.Version, want, invalid))
	}
	return invalid
}
