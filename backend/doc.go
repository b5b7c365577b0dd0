// Package backend defines the object-store contract every silt store
// implements, the one error vocabulary they share, key validation, and the
// URL registry that opens a store by name.
//
// # The contract
//
// A [Backend] has one method per verb, each taking a context first: Get,
// Put, Delete, Stat, List, plus Capabilities and Close. Conveniences such as
// [PutBytes], [ReadAll] and [Exists] are functions over the interface, so a
// store implements only the verbs.
//
//   - Get returns the object's [Version] from the same response as its
//     bytes; [GetOptions].IfMatch reads only that version.
//   - [GetOptions].Range reads Length bytes from Offset (S3 Range, GCS
//     NewRangeReader, a section of the file): the body yields exactly
//     those bytes while ObjectInfo, Size included, describes the whole
//     object. A range that does not lie inside the object is
//     [ErrInvalidRange] on every store: S3 and GCS cut a range that ends
//     past the object at its end, and [Portable] refuses that answer.
//     Range combines with IfMatch (a part of exactly this version; a
//     stale version is [ErrPrecondition] whatever the range) and with
//     IfNoneMatch. There is no capability to claim: a driver that cannot
//     range returns [ErrNotSupported], never the whole object.
//   - Put takes a [Cond]: IfAbsent (S3 If-None-Match: *, GCS DoesNotExist,
//     link(2) on a directory) or IfMatch (S3 If-Match, GCS GenerationMatch,
//     flock plus compare plus rename on a directory). It returns the new
//     version from the write's own response, ready for the next IfMatch.
//   - A Version is opaque: an ETag, a generation, a content hash. It is
//     compared only with versions of the same store, never with a local
//     hash.
//   - List streams pages in ascending byte order of key.
//   - [Capabilities] say what the store guarantees (conditional put,
//     conditional delete, a per-key mutation rate). Callers branch on them,
//     never on a failed call; asking for an unclaimed capability is
//     [ErrNotSupported].
//
// # Errors
//
// Every store classifies its SDK's errors in exactly one function into:
// [ErrNotExist], [ErrPrecondition] (including S3's 404 on If-Match of a
// missing key), [ErrNotSupported], [ErrInvalidKey] (a [*KeyError]),
// [ErrInvalidRange] (S3's and GCS's 416), and a
// [*Error] that says whether retrying may help ([IsRetryable]). Callers use
// errors.Is and errors.As only; nothing outside a store's package inspects
// an SDK type or status code. A cancelled context is returned unchanged.
//
// # Keys
//
// [ValidateKey] is shared by every store and runs, in [Portable], before
// any I/O: no empty
// key, no leading slash, no empty, "." or ".." segment, no backslash, no
// control character, valid UTF-8, at most [MaxKeyLen] bytes.
//
// # Opening a store by URL
//
// Store packages register a scheme in init; [Open], the one function that
// opens a store for users, picks the driver from the URL:
// "file:///srv/bucket", "mem://name", "s3://bucket/prefix?region=..",
// "gs://bucket/prefix", "blob+azblob://container". Unknown schemes and
// unknown query parameters are errors. A path after the bucket is a key
// prefix ([Prefixed]).
//
// What Open returns is the production stack, built by [Production] and
// nowhere else: [Retry] (jittered backoff, within an operation deadline of
// 15 s without progress; ?timeout= on any URL) over [Timeouts] (per
// attempt: 5 s for the store to begin answering, ?first_byte_timeout=;
// 30 s for a started transfer to move its next byte, ?stall_timeout=)
// over [Portable] (the checks and the transport classification every
// store shares) over the driver.
//
// # Writing a driver
//
// A driver is a type with the [Backend] method set that talks to one kind
// of store; consumers never see it bare. What it may rely on, what it must
// do, and what it must leave to the layers above:
//
//   - Implement [Driver], not [Backend]: Backend has a method only this
//     package implements, so a bare driver cannot be handed to a consumer
//     (a compile error, as gocloud's driver.Bucket is no blob.Bucket).
//     The package's New returns backend.Portable(driver); the opener
//     registered with [Register] returns the Driver, and the registry
//     puts Portable over it. A wrapper (backend/wrap, a test's fault
//     injector) embeds the Backend it wraps and so is one itself.
//   - Rely on Portable: keys and prefixes are valid ([ValidateKey]),
//     conditions are consistent and claimed in Capabilities, the context
//     is live when a call arrives, Put's size is not negative, and
//     ListOptions.PageSize is within 1..[DefaultPageSize]. Do not check
//     these again; check only the rules of your own store (fs reserves
//     its ".silt-fs" directory, say).
//   - Classify in one function: map your SDK's answers to the vocabulary
//     below with one constructor per kind ([NotFound],
//     [PreconditionFailed], [NotModified], [InvalidRange], [RangeOutside],
//     [Permanent], [Retryable]); never build an [*Error] literal. What
//     you leave unclassified (a network error, a reset) Portable
//     classifies with [ClassifyTransport].
//   - Put: read at most size+1 bytes and pass the count to
//     [CheckBodySize] before anything becomes visible, so a short or long
//     body fails alike on every store and stores nothing.
//   - A ranged Get under IfMatch answered 416 by a store that ignores read
//     preconditions is settled by [StaleOrInvalid] with one Stat.
//   - Do not retry, time out or sleep: [Retry] and [Timeout] above
//     Portable do that for every store (turn your SDK's own retries off).
//   - Register a scheme in init, list the package in
//     github.com/siltsync/silt/backend/stores, and pass the conformance
//     suite (next section).
//
// # Testing a store
//
// The package github.com/siltsync/silt/conformance holds the suite every
// store in this repository passes. An outside author runs it with:
//
//	func TestConformance(t *testing.T) {
//		conformance.RunBackend(t, func(t *testing.T) backend.Backend {
//			return newEmptyStoreForTest(t)
//		})
//		conformance.RunSyncer(t, func(t *testing.T) backend.Backend {
//			return newEmptyStoreForTest(t)
//		})
//	}
//
// Wrappers for request counting, latency, fault injection and request
// logging live in github.com/siltsync/silt/backend/wrap; retry is [Retry],
// in this package, part of the production stack above.
package backend
