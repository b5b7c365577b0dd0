package backend

import (
	"context"
	"io"
	"time"
)

// Version is an opaque token naming one state of one object: an S3 ETag as
// the store returned it, a GCS generation, a content hash for a directory.
// Versions are compared only with versions from the same backend and key,
// never with a locally computed hash (multipart ETags are not MD5).
type Version string

// ObjectInfo describes one object. Every field comes from the response that
// produced it: Get fills it from the same response as the bytes, Put from
// the write's own response.
type ObjectInfo struct {
	Key     string    // key relative to the backend's root
	Size    int64     // size in bytes
	Version Version   // opaque version token; never empty for a stored object
	ModTime time.Time // store's modification time; may be zero where unknown
}

// Cond is a write or delete precondition. The zero value is unconditional.
// At most one of IfAbsent and IfMatch may be set.
type Cond struct {
	// IfAbsent makes the operation succeed only when the key does not exist
	// (S3 If-None-Match: *, GCS DoesNotExist, link(2) on a directory).
	IfAbsent bool
	// IfMatch makes the operation succeed only when the key exists at this
	// version (S3 If-Match, GCS GenerationMatch). A missing key fails with
	// ErrPrecondition.
	IfMatch Version
	// ContentNamed says the key names its bytes (a content hash): any
	// object stored under it holds exactly the bytes of this write. It
	// changes nothing at the store; it tells [Retry] that the write is
	// idempotent, so a failure of unknown outcome may be resent, and that
	// a key found present settles it ("already stored": ErrPrecondition
	// under IfAbsent, success without it). It is refused with IfMatch.
	ContentNamed bool
}

// IsZero reports whether c is unconditional.
func (c Cond) IsZero() bool { return !c.IfAbsent && c.IfMatch == "" }

// GetOptions modify a Get. At most one of IfMatch and IfNoneMatch may be
// set.
type GetOptions struct {
	// IfMatch reads the object only at this version; when the object has
	// moved on (or is gone) Get fails with ErrPrecondition.
	IfMatch Version
	// IfNoneMatch reads the object only if it is no longer at this
	// version; when it still is, Get fails with ErrNotModified and sends
	// no body (S3 If-None-Match, GCS ifGenerationNotMatch), so an
	// unchanged object costs one small request. A missing object is
	// ErrNotExist as usual.
	IfNoneMatch Version
	// Range, when not nil, reads only part of the object (S3 Range, GCS
	// NewRangeReader, ReadAt on a file): the body yields exactly
	// Range.Length bytes from Range.Offset, while ObjectInfo still
	// describes the whole object (its Size is the object's size). A range
	// that does not lie inside the object fails with ErrInvalidRange.
	Range *Range
}

// Range is a byte range of one object: Length bytes from Offset. Offset is
// at least 0 and Length at least 1.
type Range struct {
	Offset int64
	Length int64
}

// End returns the offset one past the range's last byte.
func (r Range) End() int64 { return r.Offset + r.Length }

// Within reports whether r is well formed (Offset at least 0, Length at
// least 1, End not overflowing) and lies inside an object of size bytes:
// the test every driver applies before it answers a ranged Get.
func (r Range) Within(size int64) bool {
	return r.Offset >= 0 && r.Length >= 1 && r.End() > r.Offset && r.End() <= size
}

// ListOptions modify a List.
type ListOptions struct {
	// PageSize is the largest number of objects handed to one call of the
	// page function; 0 means the backend's default. Backends may deliver
	// smaller pages (including an empty last page).
	PageSize int
}

// Capabilities state what a backend guarantees. The syncer branches on
// them, never on a failed call.
type Capabilities struct {
	// ConditionalPut means Put honours Cond{IfAbsent} and Cond{IfMatch}
	// atomically, across processes and machines.
	ConditionalPut bool
	// AtomicCreate means Put honours Cond{IfAbsent} atomically even where
	// ConditionalPut is false (a store with create-if-absent but no CAS).
	AtomicCreate bool
	// ConditionalDelete means Delete honours Cond{IfMatch}.
	ConditionalDelete bool
	// MaxMutationsPerKeyPerSecond is the store's sustained limit on writes
	// to one key (GCS: about 1); 0 means no known limit.
	MaxMutationsPerKeyPerSecond float64
	// ListAfterWrite means a successful Put is visible to a List that
	// starts after it returns.
	ListAfterWrite bool
}

// Backend is an object store as its consumers use it: a [Driver] behind
// [Portable], and any layers above that ([Retry], [Timeout], [Prefixed],
// backend/wrap). It is safe for concurrent use.
//
// Only this package implements Backend's unexported method, so a bare
// driver is not a Backend and cannot be handed to a consumer: it becomes
// one through Portable. A layer outside this package (a wrapper, a test's
// fault injector) embeds the Backend it wraps, and is a Backend because
// what it wraps is.
type Backend interface {
	Driver
	// portableLayer marks a value built by this package over a Driver.
	portableLayer()
}

// Driver is what a store implements: the verbs and their contract. A
// driver may rely on [Portable] above it: keys valid ([ValidateKey]),
// conditions consistent and claimed, the context live and
// ListOptions.PageSize within 1..[DefaultPageSize] when a call arrives.
// Implementations are safe for concurrent use. See "Writing a driver" in
// the package doc.
type Driver interface {
	// Get opens the object for reading. The returned ObjectInfo, and
	// its Version in particular, describes exactly the bytes the reader
	// yields. The caller must close the reader. A missing key is
	// ErrNotExist; a failed GetOptions.IfMatch is ErrPrecondition.
	Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error)

	// Put stores size bytes from body under key, subject to cond, and
	// returns the new object's info from the write's own response. The
	// body is read from its current position; a retrying wrapper may seek
	// it back. A failed condition is ErrPrecondition and leaves the
	// object as it was. A cancelled or failed Put leaves either the old
	// object or the new one, never a partial one.
	Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error)

	// Delete removes key, subject to cond. Deleting a missing key without a
	// condition succeeds; with Cond{IfMatch} it is ErrPrecondition. A
	// backend without conditional delete returns ErrNotSupported for a
	// conditional one.
	Delete(ctx context.Context, key string, cond Cond) error

	// Stat returns the object's info without its bytes. A missing key is
	// ErrNotExist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// List calls fn with successive pages of the objects whose keys begin
	// with prefix, in ascending byte order of key. The prefix need not end
	// at a "/". An error from fn stops the listing and is returned.
	List(ctx context.Context, prefix string, opts ListOptions, fn func(page []ObjectInfo) error) error

	// Capabilities reports what this backend guarantees.
	Capabilities() Capabilities

	// Close releases the backend's resources.
	Close() error
}

// Unwrapper is implemented by backends that wrap another (see backend/wrap).
type Unwrapper interface {
	Unwrap() Backend
}

// under returns the layer below d: the driver below a Portable, the
// backend an [Unwrapper] wraps; ok is false at the bottom.
func under(d Driver) (Driver, bool) {
	switch v := d.(type) {
	case *portable:
		return v.inner, true
	case Unwrapper:
		return v.Unwrap(), true
	}
	return nil, false
}
