package s3

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/siltsync/silt/backend"
)

// permissionFor names the IAM action a request of op needs, for 403
// messages: the user can fix a policy faster than they can read a
// request ID.
var permissionFor = map[string]string{
	"get": "s3:GetObject",
	// HEAD is authorised as GetObject.
	"stat": "s3:GetObject",
	// Multipart uploads also need s3:AbortMultipartUpload to clean up.
	"put":    "s3:PutObject",
	"delete": "s3:DeleteObject",
	"list":   "s3:ListBucket",
}

// classify turns an S3 answer into the backend error vocabulary. It is the
// only place in this package that looks at status codes or S3 error codes;
// each provider quirk is one case with a row in errors_test.go.
func (b *Backend) classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	// Everything without an HTTP response (a failed send, the caller's
	// cancellation, a credential lookup) is left as it is: transport
	// failures are classified once, by backend.Portable, for every store.
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() == 0 {
		return err
	}
	status := re.HTTPStatusCode()
	code := ""
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		code = ae.ErrorCode()
	}
	wrap := func(sentinel error) error {
		return &backend.Error{Op: op, Key: key, Err: fmt.Errorf("%w: %w", sentinel, err)}
	}
	switch {
	case status == http.StatusPreconditionFailed:
		return wrap(backend.ErrPrecondition)
	case status == http.StatusNotModified:
		// GET with If-None-Match naming the current ETag: the caller's
		// copy is current. No body was sent; nothing to retry.
		return wrap(backend.ErrNotModified)
	case status == http.StatusNotFound && code == "NoSuchBucket":
		return backend.Permanent(op, key, fmt.Errorf("bucket %q does not exist (silt never creates buckets): %w", b.cfg.Bucket, err))
	case status == http.StatusNotFound && code == "NoSuchUpload":
		// Our multipart upload was aborted under us (a lifecycle rule);
		// a retried Put starts a new one.
		return backend.Retryable(op, key, err)
	case status == http.StatusNotFound && sentIfMatch(re):
		// AWS answers If-Match on a missing key with 404 NoSuchKey where
		// the contract (and GCS, and gofakes3) says precondition failed.
		return wrap(backend.ErrPrecondition)
	case status == http.StatusNotFound:
		return wrap(backend.ErrNotExist)
	case status == http.StatusConflict && (code == "ConditionalRequestConflict" || code == "OperationAborted"):
		// A concurrent conditional write was in flight; AWS asks for a
		// retry, and the retry sees the winner's version (then 412).
		return backend.Retryable(op, key, err)
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout,
		code == "SlowDown", code == "RequestTimeout", code == "Throttling":
		return backend.Retryable(op, key, err)
	case status == http.StatusNotImplemented:
		// A store that does not implement a header (often If-Match or
		// If-None-Match) says so with 501; retrying cannot change that.
		return backend.Permanent(op, key, fmt.Errorf("store does not implement this request: %w: %w", backend.ErrNotSupported, err))
	case status >= 500:
		return backend.Retryable(op, key, err)
	case status == http.StatusForbidden:
		hint := ""
		if op == "get" || op == "stat" {
			hint = " (without s3:ListBucket a missing key also answers 403)"
		}
		return backend.Permanent(op, key, fmt.Errorf("access denied to bucket %q: the credentials probably lack %s%s: %w",
			b.cfg.Bucket, permissionFor[op], hint, err))
	case status == http.StatusMovedPermanently:
		return backend.Permanent(op, key, fmt.Errorf("bucket %q is in another region than %q; set Config.Region (region= in the URL): %w",
			b.cfg.Bucket, b.region, err))
	}
	return backend.Permanent(op, key, err)
}

// sentIfMatch reports whether the request that got this response carried
// If-Match. It is read from the request as sent, so every verb (GetObject,
// PutObject, CompleteMultipartUpload, DeleteObject) is covered by one rule.
func sentIfMatch(re *smithyhttp.ResponseError) bool {
	r := re.HTTPResponse()
	return r != nil && r.Response != nil && r.Request != nil && r.Request.Header.Get("If-Match") != ""
}
