// Package s3 is the backend for Amazon S3 and S3-compatible stores (MinIO,
// Ceph RGW, Cloudflare R2, versitygw, moto, gofakes3), built directly on
// aws-sdk-go-v2 so that conditional writes and the ETag they return are
// under silt's control.
//
// Versions are ETags exactly as the store returns them (quoted). They are
// opaque: a multipart or SSE-KMS ETag is not an MD5, so silt never compares
// one with a local hash, only with another ETag of the same key.
//
// # URLs
//
//	s3://bucket/optional/prefix?region=eu-west-1
//
// The path is a key prefix. Credentials come from the standard AWS chain
// (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared
// files, SSO, IMDS). Parameters, all optional; any other is an error:
//
//   - region: the bucket's region (default: AWS_REGION, the shared config,
//     then us-east-1).
//   - endpoint: base URL of a non-AWS store, e.g. http://127.0.0.1:7070.
//   - use_path_style=true: bucket in the path, not the host name; most
//     self-hosted stores and emulators need it.
//   - disable_https=true: plain http for a scheme-less endpoint.
//   - request_checksum_calculation, response_checksum_validation:
//     when_supported (the SDK default) or when_required; use when_required
//     for stores that reject the SDK's CRC checksums.
//   - conditional_delete=false: the store ignores If-Match on DELETE
//     (default true, as on AWS since 2025-09).
//   - multipart_threshold, part_size: in bytes (defaults 64 MiB and 16 MiB).
//   - profile: the shared config profile to use (as `aws --profile`); it
//     wins over AWS_PROFILE and over keys in the environment.
//
// Static keys may be given as user info, s3://KEY_ID:SECRET@bucket, for
// stores that hand out a key pair; they win over every other source. The
// URL then holds a secret: print it only as url.URL.Redacted does.
// [Backend.Describe] names the source the chain will use ("env
// (AWS_ACCESS_KEY_ID)", "shared profile work (~/.aws/credentials, ...)",
// "static from URL"), never the credentials themselves.
//
// A local emulator or gateway:
//
//	s3://bucket?endpoint=http://127.0.0.1:7070&use_path_style=true&region=us-east-1
//
// # Errors
//
// One function, classify in errors.go, maps every SDK error:
//
//   - 412 PreconditionFailed is [backend.ErrPrecondition].
//   - 304 Not Modified (a GET whose If-None-Match, from
//     GetOptions.IfNoneMatch, names the current ETag) is
//     [backend.ErrNotModified], never retryable.
//   - 404 NoSuchKey is [backend.ErrNotExist], except on a request that
//     carried If-Match, where AWS answers 404 for a missing key and the
//     contract says [backend.ErrPrecondition].
//   - 404 NoSuchBucket is permanent: silt never creates buckets.
//   - Any other 404 code (versitygw's XAdminUserNotFound, an unknown
//     access key, is [backend.ErrCredentials]; NoSuchVersion, MinIO's
//     XMinioAdminNoSuchUser, ...) is a permanent error naming the code,
//     never absent: only NoSuchKey, or a HEAD's bare 404, means that.
//   - 416 InvalidRange (a ranged GET from at or past the object's end, or
//     any range of an empty object) is [backend.ErrInvalidRange].
//   - 409 ConditionalRequestConflict, 429, 408, 5xx (but 501) and transport
//     failures are retryable ([backend.IsRetryable]); 501 NotImplemented
//     wraps [backend.ErrNotSupported].
//   - 403 is permanent, with a message naming the bucket and the IAM
//     action the operation needs.
//   - A cancelled or expired context is returned unchanged.
//
// # Ranged reads
//
// GetOptions.Range sends Range: bytes=first-last. The answer's
// ContentLength is the range's; ObjectInfo.Size is the total of its
// Content-Range (bytes a-b/total), and an answer holding other bytes than
// asked for (a range cut at the object's end included) is refused. A
// store that ignores Range answers 200 with the whole object and no
// Content-Range; Get then skips to the offset and stops at the range's
// end, so the caller still gets exactly the range, at the cost of
// downloading the object up to it.
//
// The SDK makes one attempt per request (Config.MaxAttempts): retries
// belong to backend.Retry, which never repeats a precondition failure and
// shares one backoff budget across requests.
//
// # Emulators
//
// gofakes3 (in-process, used by this package's tests) deviates from AWS:
// it ignores If-Match on DELETE (so its tests set DisableConditionalDelete),
// on GET (Get checks the response ETag itself, so this is harmless; a
// ranged GET under a stale If-Match whose range lies outside the current
// object gets 416, with no ETag, and Get settles it with one HEAD:
// [backend.ErrPrecondition] when the version moved on) and on
// CompleteMultipartUpload; its multipart completion returns an ETag that
// differs from the stored object's (a later If-Match with it fails safe);
// it answers If-Match on a missing key with 412 rather than 404; and it
// ends a listing whose last page is exactly full with an empty page, which
// List drops.
//
// versitygw (posix) cannot hold both "a" and "a/b" (409 ObjectParentIsFile,
// permanent) and lets DELETE with If-Match on a missing key succeed. moto
// ignores If-Match on CompleteMultipartUpload. Otherwise both behave like
// AWS; CI runs the conformance suite against both (.ci/run), and
// README.md ("Testing your store") explains how to run it against any store.
//
// Range on GET is honoured like AWS by gofakes3, versitygw v1.8.0 and moto
// (the conformance suite's ranged checks, measured): 206 with
// Content-Range, a range past the end cut at the end, 416 from at or past
// the end.
//
// If-None-Match on GET (GetOptions.IfNoneMatch) is honoured with 304 by
// gofakes3, versitygw v1.8.0 and moto alike (measured). Get still compares
// the response's ETag with it, so a gateway that drops the header costs
// the start of a download, closed unread, not a wrong answer.
package s3
