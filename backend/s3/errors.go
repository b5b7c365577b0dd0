package s3

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

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
	// The SDK reports a credential chain that found nothing with no type
	// of its own (a SigningError in older paths, "get identity: get
	// credentials:" in the smithy auth path), so its text is matched here,
	// once.
	if _, ok := errors.AsType[*v4.SigningError](err); ok || strings.Contains(err.Error(), "get credentials:") || strings.Contains(err.Error(), "failed to refresh cached credentials") {
		return backend.Permanent(op, key, fmt.Errorf("%w: no AWS credentials found; silt looked in %s: %w", backend.ErrCredentials, credentialSources(), err))
	}
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
		return backend.Permanent(op, key, fmt.Errorf("%w: %w", sentinel, err))
	}
	fail := func(sentinel error, format string, args ...any) error {
		return backend.Permanent(op, key, fmt.Errorf("%w: %s: %w", sentinel, fmt.Sprintf(format, args...), err))
	}
	// Codes first: a gateway may send InvalidAccessKeyId with 404, and a
	// wrong secret comes as 403 like a missing permission.
	switch code {
	case "InvalidAccessKeyId", "XAdminUserNotFound":
		// versitygw answers an unknown access key with 404
		// XAdminUserNotFound.
		return fail(backend.ErrCredentials, "the access key %s is not known to %s (check AWS_ACCESS_KEY_ID, or aws_access_key_id of profile %s)",
			accessKey(re), b.Endpoint(), profile())
	case "SignatureDoesNotMatch":
		return fail(backend.ErrCredentials, "the secret key does not match the access key %s (check AWS_SECRET_ACCESS_KEY, or aws_secret_access_key of profile %s)",
			accessKey(re), profile())
	case "ExpiredToken", "TokenRefreshRequired", "RequestExpired":
		return fail(backend.ErrCredentials, "the session token of access key %s has expired (renew it: aws sso login, or a fresh AWS_SESSION_TOKEN)", accessKey(re))
	case "InvalidToken":
		return fail(backend.ErrCredentials, "the session token of access key %s is not valid (check AWS_SESSION_TOKEN)", accessKey(re))
	case "NoSuchBucket":
		return fail(backend.ErrBucketNotFound, "bucket %q does not exist at %s (silt never creates buckets; check the URL)", b.cfg.Bucket, b.Endpoint())
	}
	switch {
	case status == http.StatusPreconditionFailed:
		return wrap(backend.ErrPrecondition)
	case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
		// A ranged GET whose offset is at or past the object's end (AWS
		// also answers so for any range of an empty object).
		return wrap(backend.ErrInvalidRange)
	case status == http.StatusNotModified:
		// GET with If-None-Match naming the current ETag: the caller's
		// copy is current. No body was sent; nothing to retry.
		return wrap(backend.ErrNotModified)
	case status == http.StatusNotFound && op == "list":
		// A listing never misses in a bucket that exists; some stores
		// answer a missing bucket with a bare 404.
		return fail(backend.ErrBucketNotFound, "bucket %q does not exist at %s (silt never creates buckets; check the URL)", b.cfg.Bucket, b.Endpoint())
	case status == http.StatusNotFound && code == "NoSuchUpload":
		// Our multipart upload was aborted under us (a lifecycle rule);
		// a retried Put starts a new one.
		return backend.Retryable(op, key, err)
	case status == http.StatusNotFound && !absent(op, code):
		// Only the code says a key is missing: a 404 naming anything else
		// (a version, a user, a configuration) read as "absent" would make
		// a bucket whose manifest cannot be read look empty.
		msg := ""
		if ae, ok := errors.AsType[smithy.APIError](err); ok {
			msg = ae.ErrorMessage()
		}
		return backend.Permanent(op, key, fmt.Errorf("%s answered 404 %s (%q), which does not mean the key is missing: %w", b.Endpoint(), codeOrNone(code), msg, err))
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
		return fail(backend.ErrPermission, "access key %s may not %s on s3://%s/%s%s", accessKey(re), permissionFor[op], b.cfg.Bucket, b.cfg.Prefix+key, hint)
	case status < 300 && cutBody(err):
		// A success whose body broke off before it could be decoded (a
		// reset or a proxy cutting a listing): the same request may
		// succeed, and a listing has no partial result to keep.
		return backend.Retryable(op, key, err)
	case status == http.StatusMovedPermanently:
		return backend.Permanent(op, key, fmt.Errorf("bucket %q is in another region than %q; set Config.Region (region= in the URL): %w",
			b.cfg.Bucket, b.region, err))
	}
	return backend.Permanent(op, key, err)
}

// cutBody reports whether err is a response body that ended early or
// could not be decoded.
func cutBody(err error) bool {
	_, deser := errors.AsType[*smithy.DeserializationError](err)
	return deser || errors.Is(err, io.ErrUnexpectedEOF)
}

// absent reports whether a 404 with this error code means the key does
// not exist: NoSuchKey, or a HEAD's bare 404 (a HEAD answer has no body,
// so the SDK names it by its status).
func absent(op, code string) bool {
	return code == "NoSuchKey" || (op == "stat" && (code == "NotFound" || code == ""))
}

func codeOrNone(code string) string {
	if code == "" {
		return "without an error code"
	}
	return code
}

// sentIfMatch reports whether the request that got this response carried
// If-Match. It is read from the request as sent, so every verb (GetObject,
// PutObject, CompleteMultipartUpload, DeleteObject) is covered by one rule.
func sentIfMatch(re *smithyhttp.ResponseError) bool {
	r := re.HTTPResponse()
	return r != nil && r.Response != nil && r.Request != nil && r.Request.Header.Get("If-Match") != ""
}

// accessKey is the access key ID the request was signed with, read from
// its Authorization header, for messages: which key was refused is the
// first thing a user needs.
func accessKey(re *smithyhttp.ResponseError) string {
	r := re.HTTPResponse()
	if r == nil || r.Response == nil || r.Request == nil {
		return "(unknown)"
	}
	_, cred, ok := strings.Cut(r.Request.Header.Get("Authorization"), "Credential=")
	if !ok {
		return "(unknown)"
	}
	id, _, _ := strings.Cut(cred, "/")
	return id
}

// profile is the shared-config profile the default chain reads.
func profile() string {
	if p := os.Getenv("AWS_PROFILE"); p != "" {
		return p
	}
	return "default"
}

// credentialSources lists where the AWS default chain looks, in its order.
func credentialSources() string {
	files := func(env, def string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		return def
	}
	return fmt.Sprintf("the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), the shared files %s and %s (profile %s), web identity (AWS_WEB_IDENTITY_TOKEN_FILE), SSO, ECS container credentials, and the EC2 instance metadata service (IMDS)",
		files("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"), files("AWS_CONFIG_FILE", "~/.aws/config"), profile())
}
