package backend

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotExist is returned when the key does not exist.
var ErrNotExist = errors.New("object does not exist")

// ErrPrecondition is returned when a Cond or GetOptions.IfMatch does not
// hold: the key exists for IfAbsent, or is missing or at another version
// for IfMatch.
var ErrPrecondition = errors.New("precondition failed")

// ErrNotModified is returned by Get when GetOptions.IfNoneMatch names the
// object's current version: the caller's copy is current.
var ErrNotModified = errors.New("object not modified")

// ErrNotSupported is returned when a backend is asked for something its
// Capabilities say it cannot do.
var ErrNotSupported = errors.New("not supported by this backend")

// ErrInvalidKey is returned (wrapped in a *KeyError) when a key fails
// ValidateKey.
var ErrInvalidKey = errors.New("invalid key")

// ErrInvalidRange is returned by Get when GetOptions.Range is malformed
// (a negative offset, a length under 1) or does not lie inside the object.
var ErrInvalidRange = errors.New("range not inside the object")

// Error carries the operation and key of a failed backend request and
// whether retrying it may help. Backends return it from their single error
// classifier; callers inspect it only with errors.Is and errors.As.
type Error struct {
	Op        string // "get", "put", "delete", "stat", "list"
	Key       string // key or prefix
	Retryable bool   // a transport failure, throttle or 5xx
	Err       error  // the underlying cause; may wrap a sentinel above
}

func (e *Error) Error() string {
	kind := ""
	if e.Retryable {
		kind = " (retryable)"
	}
	return fmt.Sprintf("%s %q%s: %v", e.Op, e.Key, kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a backend failure that may succeed if
// the same request is sent again. Precondition failures, missing keys and
// cancelled contexts are never retryable.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, ErrPrecondition) || errors.Is(err, ErrNotExist) || errors.Is(err, ErrNotModified) || errors.Is(err, context.Canceled) {
		return false
	}
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// ErrOutcomeUnknown is returned by [Retry] when a conditional write it may
// not resend failed in a way that does not show whether the store applied
// it: a 503 or 429, a reset, a timeout, a lost acknowledgement. Those
// writes are a compare-and-swap (Cond.IfMatch), a conditional Delete, and a
// create-if-absent of a key that does not name its bytes (Cond.IfAbsent
// without Cond.ContentNamed). A resend of an applied compare-and-swap fails
// its own precondition, and one of an applied create reports a conflict
// that is not one, so Retry sends such a write once and leaves the outcome
// to the caller, who settles it by reading the key back: if the key holds
// what was written, the write applied; if not, it did not, and the caller
// may merge again and retry. The error wraps the failure, which stays
// retryable for [IsRetryable] and errors.As.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// Retryable wraps err as a retryable failure of op on key.
func Retryable(op, key string, err error) error {
	return &Error{Op: op, Key: key, Retryable: true, Err: err}
}

// Permanent wraps err as a permanent failure of op on key.
func Permanent(op, key string, err error) error {
	return &Error{Op: op, Key: key, Err: err}
}

// ErrBucketNotFound is returned when the bucket (or container) a store was
// opened on does not exist. It is never ErrNotExist: a missing bucket is
// not an empty one, and an index read from it is not "no index yet". silt
// never creates buckets.
var ErrBucketNotFound = errors.New("bucket not found")

// ErrCredentials is returned when the store rejects the credentials (an
// unknown access key, a secret that does not match it, an expired token)
// or when none could be found. The message says which, and where silt
// looked.
var ErrCredentials = errors.New("credentials rejected or missing")

// ErrPermission is returned when the store accepted the credentials but
// they lack the permission a request needs; the message names the action.
var ErrPermission = errors.New("permission denied")

// ErrUnreachable is returned (inside a retryable [*Error]) when no
// connection to the store's endpoint could be made: refused, no route, a
// name that does not resolve. The message names the endpoint.
var ErrUnreachable = errors.New("endpoint unreachable")

// ErrTLS is returned when the TLS handshake with the endpoint failed: an
// untrusted or mismatched certificate, or a plain-HTTP server behind an
// https:// URL. Retrying cannot help.
var ErrTLS = errors.New("TLS handshake failed")
