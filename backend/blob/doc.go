// Package blob adapts any gocloud.dev/blob bucket (memblob, fileblob,
// s3blob, gcsblob, azureblob, ...) to the backend contract, for stores silt
// has no native backend for. It is deliberately weaker than the native s3
// and gcs backends, because the portable blob API cannot express what they
// rely on:
//
//   - No compare-and-swap. blob has no If-Match or generation-match write,
//     so Put with Cond{IfMatch} and Delete with any condition return
//     [backend.ErrNotSupported], and Capabilities says so.
//   - Create-if-absent only where it is atomic. Cond{IfAbsent} maps to
//     WriterOptions.IfNotExist only when Config.AtomicCreate says the driver
//     checks it atomically (memblob, s3blob, gcsblob, azureblob). fileblob
//     checks with stat-then-rename, which loses races across processes
//     (measured), so over fileblob IfAbsent is ErrNotSupported, not a
//     lock that sometimes admits two holders.
//   - Versions are not from the write's response. blob.Writer does not
//     report the new ETag, so Put reads the version back with a separate
//     Attributes call; a writer that slips in between makes Put report the
//     other writer's version. Without CAS nothing builds on that version
//     atomically, so the race can mislead but not corrupt.
//
// # Versions
//
// A version is "md5:<hex>" when the driver reports a content MD5, else
// "etag:<etag>", else "mod:<unix-ns>-<size>". MD5 comes first because List
// results carry an MD5 but no ETag; taking it everywhere keeps List, Stat,
// Get and Put in agreement without an Attributes call per listed object
// (which List makes only for objects without an MD5, such as S3 multipart
// uploads). Two writes of identical bytes therefore share a version.
//
// Get must return the version of exactly the bytes it serves, but the blob
// Reader exposes no ETag (and memblob's As exposes nothing). Get therefore
// brackets the read: Attributes, open the reader, check that the reader's
// size and modification time match, Attributes again, and retry when the
// object changed in between. That costs two metadata requests per Get and
// leaves one hole: a rewrite back to identical attributes (same content,
// same modification time) between the two calls goes unseen.
//
// GetOptions.IfMatch and IfNoneMatch are compared with the version from
// the first Attributes call, since the blob API has no conditional read.
// A Get whose IfNoneMatch names that version fails with
// [backend.ErrNotModified] (never retryable) after that one metadata
// request and opens no reader; a missing object is [backend.ErrNotExist]
// as usual. The version is content-derived (MD5) where the driver reports
// one, so an object rewritten with identical bytes is "not modified".
//
// GetOptions.Range opens blob's NewRangeReader. The range is judged
// against the size the first Attributes call reported, so a range outside
// the object is [backend.ErrInvalidRange] before any reader is opened
// (gocloud drivers disagree on a range past the end); the bracket then
// checks the reader's whole-object size as for a full read.
//
// # URLs
//
// "blob+<gocloud URL>" opens the gocloud URL with blob.OpenBucket. The
// registered schemes are exactly the linked drivers: blob+mem (memblob; each
// "blob+mem://" URL opens a new empty bucket) and blob+azblob (Azure Blob,
// which has no native silt backend): for example
// "blob+azblob://container?prefix=silt/" with AZURE_STORAGE_ACCOUNT and
// AZURE_STORAGE_KEY (or a connection string, a SAS token, or the default
// Azure credential), or against Azurite
// "blob+azblob://container?localemu=true&protocol=http&domain=127.0.0.1:10000".
// S3, GCS and directories are served by the native s3://, gs:// and file://
// backends, which have CAS; their gocloud drivers are not linked, so no
// scheme is registered that cannot open. Query parameters are the driver's
// own and the driver rejects unknown ones; a key prefix is gocloud's
// "prefix" parameter, not the URL path. Other gocloud drivers work through
// [New], with Config.AtomicCreate set as the driver warrants (fileblob's
// IfNotExist is stat-then-rename and was measured to admit several
// creators: AtomicCreate false).
//
// # Order
//
// List returns keys in the order the driver does. memblob and the cloud
// drivers list in byte order as the contract requires; fileblob walks
// directories, which can order "a/b" before "a-b".
package blob
