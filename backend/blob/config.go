package blob

// Config states what the wrapped bucket's driver guarantees; the adapter
// cannot find out from a *blob.Bucket, so the caller asserts it.
type Config struct {
	// AtomicCreate asserts that the driver checks WriterOptions.IfNotExist
	// atomically across processes: true for memblob (in-process only),
	// s3blob, gcsblob and azureblob; false for fileblob. When false,
	// Put with Cond{IfAbsent} returns backend.ErrNotSupported.
	AtomicCreate bool
	// ListAfterWrite asserts that a written blob is listed by a List that
	// starts after the write returns (true for the drivers above; gocloud
	// itself promises it for none).
	ListAfterWrite bool
}
