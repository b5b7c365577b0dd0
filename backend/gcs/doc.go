// Package gcs is a backend for Google Cloud Storage, built directly on
// cloud.google.com/go/storage so that every version token comes from the
// response that carried the bytes: the generation of a write is read from the
// writer after Close, the generation of a read from the same reader.
//
// # URLs
//
// "gs://bucket/some/prefix" opens bucket with every key stored under
// "some/prefix/". The URL takes no query parameters; an unknown one is an
// error rather than a silently ignored typo. Credentials come from the
// client library's default chain (Application Default Credentials).
//
// # Versions and conditions
//
// A [backend.Version] is the object's generation as a decimal string.
// Cond{IfAbsent} is sent as ifGenerationMatch=0 and Cond{IfMatch} as
// ifGenerationMatch=g, both checked atomically by the service. A version
// that is not a positive decimal integer cannot name a GCS object, so a
// condition on it fails with [backend.ErrPrecondition] without a request
// (and "0" is never sent, since GCS reads it as "does not exist").
// GetOptions.IfNoneMatch is the exception: a version that is not a
// generation can never be the current one, so Get reads the object as if
// it were unset.
//
// GetOptions.IfNoneMatch is sent as ifGenerationNotMatch, which the client
// library sends only on JSON API reads (storage.WithJSONReads); its default
// XML reads drop it silently. New therefore builds its client with JSON
// reads (which report no modification time: Get's ObjectInfo.ModTime is
// zero; List and Stat still carry it). Get also compares the generation of
// the response, so a client passed in Config.Client without JSON reads, or
// an emulator that ignores the condition, still yields
// [backend.ErrNotModified], at the cost of the start of a download instead
// of one small 304.
//
// GCS allows about one mutation per second per object name; Capabilities
// reports it so that callers batch writes to hot objects instead of
// hitting 429s.
//
// # Errors
//
// Every error passes through one classifier (errors.go): a missing object is
// [backend.ErrNotExist], except under a generation condition, where it is
// [backend.ErrPrecondition] like an HTTP 412; 304 Not Modified (a read
// under ifGenerationNotMatch naming the current generation) is
// [backend.ErrNotModified], never retryable; 408, 429, 5xx and transport
// failures are retryable [backend.Error]s; 416 (a ranged read from at or
// past the object's end) is [backend.ErrInvalidRange]; 403 is permanent and names the
// bucket and the IAM permission the operation needs; context errors are
// returned unchanged. The client library's own retries are switched off,
// because silt's retry wrapper owns retrying and a conditional write
// replayed blindly can report 412 for a write that in fact succeeded.
//
// # Emulator
//
// The storage client honours STORAGE_EMULATOR_HOST (for example
// "127.0.0.1:4443") by itself, with no credentials. fake-gcs-server v1.56.1,
// the usual emulator, ignores ifGenerationMatch on DELETE (a stale
// conditional delete deletes), so a URL opened while STORAGE_EMULATOR_HOST
// is set reports ConditionalDelete false and refuses conditional deletes
// with [backend.ErrNotSupported] instead of silently deleting. The emulator
// also ignores read preconditions (ifGenerationMatch and
// ifGenerationNotMatch alike); Get checks the generation of the response
// itself, so GetOptions.IfMatch and IfNoneMatch hold there as well. A
// ranged read under a stale IfMatch whose range lies outside the current
// object gets 416 from the emulator, which names no generation; Get
// settles it with one metadata read ([backend.ErrPrecondition] when the
// generation moved on).
//
// # Ranged reads
//
// GetOptions.Range is NewRangeReader. ObjectInfo.Size is the reader's
// Attrs.Size, the whole object's (from Content-Range). A range that GCS
// cut at the object's end, or an answer from another offset, is refused;
// at offset 0 the client accepts a whole-object 200 from a store that
// ignored Range, and Get stops that body at the range's end.
package gcs
