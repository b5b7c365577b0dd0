package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/internal/silttest"
)

// scripted is an S3 endpoint that answers every request with one status
// and S3 error code, so each quirk goes through the real SDK's
// deserialisers exactly as a store would send it.
type scripted struct {
	status int
	code   string
	hits   atomic.Int64
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	if r.Method == http.MethodHead {
		// HEAD errors have no body; the SDK sees only the status.
		w.WriteHeader(s.status)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(s.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>scripted</Message><RequestId>req-1</RequestId></Error>`, s.code)
}

// call is one backend request of a classification case.
type call func(ctx context.Context, b backend.Backend) error

var (
	putPlain = func(ctx context.Context, b backend.Backend) error {
		_, err := backend.PutBytes(ctx, b, "k", []byte("x"), backend.Cond{})
		return err
	}
	putIfAbsent = func(ctx context.Context, b backend.Backend) error {
		_, err := backend.PutBytes(ctx, b, "k", []byte("x"), backend.Cond{IfAbsent: true})
		return err
	}
	putIfMatch = func(ctx context.Context, b backend.Backend) error {
		_, err := backend.PutBytes(ctx, b, "k", []byte("x"), backend.Cond{IfMatch: `"v1"`})
		return err
	}
	getPlain = func(ctx context.Context, b backend.Backend) error {
		_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{}, 0)
		return err
	}
	getIfMatch = func(ctx context.Context, b backend.Backend) error {
		_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{IfMatch: `"v1"`}, 0)
		return err
	}
	getIfNoneMatch = func(ctx context.Context, b backend.Backend) error {
		_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{IfNoneMatch: `"v1"`}, 0)
		return err
	}
	getRange = func(ctx context.Context, b backend.Backend) error {
		_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{Range: &backend.Range{Offset: 10, Length: 5}}, 0)
		return err
	}
	statPlain = func(ctx context.Context, b backend.Backend) error {
		_, err := b.Stat(ctx, "k")
		return err
	}
	deletePlain = func(ctx context.Context, b backend.Backend) error {
		return b.Delete(ctx, "k", backend.Cond{})
	}
	deleteIfMatch = func(ctx context.Context, b backend.Backend) error {
		return b.Delete(ctx, "k", backend.Cond{IfMatch: `"v1"`})
	}
	listAll = func(ctx context.Context, b backend.Backend) error {
		return b.List(ctx, "", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
	}
)

// TestBackend_Classify_ScriptedStatuses has one row per S3 quirk that
// classify handles.
func TestBackend_Classify_ScriptedStatuses(t *testing.T) {
	cases := []struct {
		name      string
		call      call
		multipart bool // send Put as a multipart upload
		status    int
		code      string
		is        error    // errors.Is must hold (nil: no sentinel wanted)
		isNot     error    // errors.Is must not hold
		retryable bool     // backend.IsRetryable
		mentions  []string // substrings of the message
	}{
		{name: "412 on If-None-Match is a precondition", call: putIfAbsent, status: 412, code: "PreconditionFailed", is: backend.ErrPrecondition},
		{name: "412 on If-Match is a precondition", call: putIfMatch, status: 412, code: "PreconditionFailed", is: backend.ErrPrecondition},
		{name: "412 on GET If-Match is a precondition", call: getIfMatch, status: 412, code: "PreconditionFailed", is: backend.ErrPrecondition},
		// AWS answers If-Match on a missing key with 404.
		{name: "404 on PUT If-Match is a precondition", call: putIfMatch, status: 404, code: "NoSuchKey", is: backend.ErrPrecondition, isNot: backend.ErrNotExist},
		{name: "404 on GET If-Match is a precondition", call: getIfMatch, status: 404, code: "NoSuchKey", is: backend.ErrPrecondition, isNot: backend.ErrNotExist},
		{name: "404 on DELETE If-Match is a precondition", call: deleteIfMatch, status: 404, code: "NoSuchKey", is: backend.ErrPrecondition, isNot: backend.ErrNotExist},
		// S3 answers If-None-Match naming the current ETag with 304 and
		// no body.
		{name: "304 on GET If-None-Match is not-modified", call: getIfNoneMatch, status: 304, code: "NotModified", is: backend.ErrNotModified, isNot: backend.ErrPrecondition},
		{name: "404 on GET If-None-Match is not-exist", call: getIfNoneMatch, status: 404, code: "NoSuchKey", is: backend.ErrNotExist, isNot: backend.ErrPrecondition},
		// A range at or past the object's end (any range of an empty
		// object on AWS).
		{name: "416 InvalidRange on a ranged GET is invalid-range", call: getRange, status: 416, code: "InvalidRange", is: backend.ErrInvalidRange, isNot: backend.ErrNotExist},
		{name: "404 on ranged GET is not-exist", call: getRange, status: 404, code: "NoSuchKey", is: backend.ErrNotExist, isNot: backend.ErrInvalidRange},
		{name: "404 on plain GET is not-exist", call: getPlain, status: 404, code: "NoSuchKey", is: backend.ErrNotExist, isNot: backend.ErrPrecondition},
		{name: "404 on HEAD (no body) is not-exist", call: statPlain, status: 404, is: backend.ErrNotExist},
		{name: "404 NoSuchBucket is bucket-not-found, not not-exist", call: getPlain, status: 404, code: "NoSuchBucket", is: backend.ErrBucketNotFound, isNot: backend.ErrNotExist, mentions: []string{`bucket "scripted"`, "does not exist", "127.0.0.1"}},
		{name: "404 NoSuchBucket on LIST is bucket-not-found", call: listAll, status: 404, code: "NoSuchBucket", is: backend.ErrBucketNotFound, isNot: backend.ErrNotExist, mentions: []string{`bucket "scripted"`}},
		{name: "bare 404 on LIST is bucket-not-found, never an empty listing", call: listAll, status: 404, code: "NotFound", is: backend.ErrBucketNotFound, isNot: backend.ErrNotExist},
		// An S3 gateway that answers an unknown key with 404: the code
		// decides, so it is not a missing object (nor an empty index).
		{name: "InvalidAccessKeyId names the key", call: getPlain, status: 403, code: "InvalidAccessKeyId", is: backend.ErrCredentials, isNot: backend.ErrPermission, mentions: []string{"access key silt-test-key is not known", "AWS_ACCESS_KEY_ID"}},
		{name: "InvalidAccessKeyId with 404 is not not-exist", call: getPlain, status: 404, code: "InvalidAccessKeyId", is: backend.ErrCredentials, isNot: backend.ErrNotExist, mentions: []string{"silt-test-key"}},
		{name: "InvalidAccessKeyId with 404 on LIST is not an empty listing", call: listAll, status: 404, code: "InvalidAccessKeyId", is: backend.ErrCredentials, isNot: backend.ErrBucketNotFound},
		{name: "SignatureDoesNotMatch is a wrong secret, not a permission", call: getPlain, status: 403, code: "SignatureDoesNotMatch", is: backend.ErrCredentials, isNot: backend.ErrPermission, mentions: []string{"the secret key does not match the access key silt-test-key", "AWS_SECRET_ACCESS_KEY"}},
		{name: "ExpiredToken says renew", call: putPlain, status: 400, code: "ExpiredToken", is: backend.ErrCredentials, mentions: []string{"session token", "expired"}},
		// TestBackend_Regression_XAdminUserNotFoundReadsAsAbsent: the
		// status decided, so versitygw's unknown access key read as "no
		// manifest". Only NoSuchKey (and a HEAD's bare 404) is absent;
		// every other 404 code is an error naming what the server said.
		{name: "versitygw 404 XAdminUserNotFound is a refused credential", call: getPlain, status: 404, code: "XAdminUserNotFound", is: backend.ErrCredentials, isNot: backend.ErrNotExist, mentions: []string{"access key silt-test-key is not known"}},
		{name: "versitygw 404 XAdminUserNotFound on HEAD-less LIST is a refused credential", call: listAll, status: 404, code: "XAdminUserNotFound", is: backend.ErrCredentials, isNot: backend.ErrBucketNotFound},
		{name: "versitygw 404 XAdminUserNotFound on If-Match PUT is not a precondition", call: putIfMatch, status: 404, code: "XAdminUserNotFound", is: backend.ErrCredentials, isNot: backend.ErrPrecondition},
		{name: "AWS 404 NoSuchVersion is an error, not absent", call: getPlain, status: 404, code: "NoSuchVersion", isNot: backend.ErrNotExist, mentions: []string{"404 NoSuchVersion", "scripted", "does not mean the key is missing"}},
		{name: "AWS 404 NoSuchLifecycleConfiguration is an error, not absent", call: getPlain, status: 404, code: "NoSuchLifecycleConfiguration", isNot: backend.ErrNotExist, mentions: []string{"NoSuchLifecycleConfiguration"}},
		{name: "Ceph 404 NoSuchTagSet is an error, not absent", call: getIfNoneMatch, status: 404, code: "NoSuchTagSet", isNot: backend.ErrNotExist, mentions: []string{"NoSuchTagSet"}},
		{name: "MinIO 404 XMinioAdminNoSuchUser is an error, not absent", call: getPlain, status: 404, code: "XMinioAdminNoSuchUser", isNot: backend.ErrNotExist, mentions: []string{"XMinioAdminNoSuchUser"}},
		{name: "404 NoSuchUpload outside a multipart upload is not absent", call: getPlain, status: 404, code: "NoSuchUpload", isNot: backend.ErrNotExist, retryable: true},
		{name: "404 NotFound on GET (a proxy) is an error, not absent", call: getPlain, status: 404, code: "NotFound", isNot: backend.ErrNotExist, mentions: []string{"404 NotFound"}},
		{name: "404 on DELETE If-Match with another code is not a precondition", call: deleteIfMatch, status: 404, code: "NoSuchVersion", isNot: backend.ErrPrecondition},
		{name: "404 NoSuchKey on DELETE is not-exist", call: deletePlain, status: 404, code: "NoSuchKey", is: backend.ErrNotExist},
		{name: "404 NoSuchUpload restarts the upload", call: putPlain, multipart: true, status: 404, code: "NoSuchUpload", isNot: backend.ErrNotExist, retryable: true},
		{name: "409 ConditionalRequestConflict is retryable", call: putIfMatch, status: 409, code: "ConditionalRequestConflict", retryable: true, isNot: backend.ErrPrecondition},
		{name: "409 on multipart completion is retryable", call: putIfAbsent, multipart: true, status: 409, code: "ConditionalRequestConflict", retryable: true},
		// versitygw's posix store: "a" exists as a file, so "a/b" cannot.
		{name: "409 ObjectParentIsFile is permanent", call: putPlain, status: 409, code: "ObjectParentIsFile"},
		{name: "429 is retryable", call: putPlain, status: 429, code: "TooManyRequests", retryable: true},
		{name: "503 SlowDown is retryable", call: getPlain, status: 503, code: "SlowDown", retryable: true},
		{name: "500 InternalError is retryable", call: listAll, status: 500, code: "InternalError", retryable: true},
		{name: "400 RequestTimeout is retryable", call: putPlain, status: 400, code: "RequestTimeout", retryable: true},
		{name: "501 NotImplemented is not-supported", call: putIfAbsent, status: 501, code: "NotImplemented", is: backend.ErrNotSupported},
		{name: "403 on GET names s3:GetObject", call: getPlain, status: 403, code: "AccessDenied", is: backend.ErrPermission, isNot: backend.ErrNotExist, mentions: []string{"s3://scripted/k", "s3:GetObject", "s3:ListBucket", "silt-test-key"}},
		{name: "403 on HEAD names s3:GetObject", call: statPlain, status: 403, mentions: []string{"s3:GetObject"}},
		{name: "403 on PUT names s3:PutObject", call: putPlain, status: 403, code: "AccessDenied", is: backend.ErrPermission, mentions: []string{"s3://scripted/k", "s3:PutObject"}},
		{name: "403 on DELETE names s3:DeleteObject", call: deletePlain, status: 403, code: "AccessDenied", mentions: []string{"s3:DeleteObject"}},
		{name: "403 on LIST names s3:ListBucket", call: listAll, status: 403, code: "AccessDenied", mentions: []string{"s3:ListBucket"}},
		{name: "301 names the region", call: getPlain, status: 301, code: "PermanentRedirect", mentions: []string{"another region", "us-east-1"}},
		{name: "400 InvalidArgument is permanent", call: putPlain, status: 400, code: "InvalidArgument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{status: tc.status, code: tc.code}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			cfg := s3.Config{Bucket: "scripted"}
			if tc.multipart {
				cfg.MultipartThreshold = 1
			}
			b := openAt(t, ts.URL, cfg)
			err := tc.call(t.Context(), b)
			if err == nil {
				t.Fatal("err = nil, want an error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is(err, %v)", err, tc.is)
			}
			if tc.isNot != nil && errors.Is(err, tc.isNot) {
				t.Errorf("err = %v, want !errors.Is(err, %v)", err, tc.isNot)
			}
			if got := backend.IsRetryable(err); got != tc.retryable {
				t.Errorf("IsRetryable = %v, want %v (err %v)", got, tc.retryable, err)
			}
			var be *backend.Error
			if !errors.As(err, &be) {
				t.Errorf("err = %T %v, want a *backend.Error", err, err)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err = %q, want it to mention %q", err, m)
				}
			}
			// One attempt per request: retries belong to backend.Retry.
			// (A failed multipart upload adds its abort.)
			if want := int64(1); !tc.multipart && srv.hits.Load() != want {
				t.Errorf("server saw %d requests, want %d: the SDK retried", srv.hits.Load(), want)
			}
		})
	}
}

// TestBackend_Classify_ContextCanceledPassesThrough cancels a request the
// server is holding: the error must still match context.Canceled and must
// not be retryable.
func TestBackend_Classify_ContextCanceledPassesThrough(t *testing.T) {
	arrived := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	defer ts.Close()
	b := openAt(t, ts.URL, s3.Config{Bucket: "scripted"})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := b.Stat(ctx, "k")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want errors.Is(err, context.Canceled)", err)
	}
	if backend.IsRetryable(err) {
		t.Errorf("IsRetryable(%v) = true, want false for a cancelled context", err)
	}
}

// TestBackend_Classify_ConnectionDropIsRetryable closes the connection
// without answering, as a crashing proxy does.
func TestBackend_Classify_ConnectionDropIsRetryable(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		silttest.ResetConnection(t, w)
	}))
	defer ts.Close()
	b := openAt(t, ts.URL, s3.Config{Bucket: "scripted"})
	_, err := backend.PutBytes(t.Context(), b, "k", bytes.Repeat([]byte("x"), 1024), backend.Cond{IfAbsent: true})
	if !backend.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
}

// TestBackend_Classify_ResponseTimeoutIsRetryable lets the HTTP client
// give up waiting for headers; that is the store's slowness, not the
// caller's cancellation, even though net/http's timeout error matches
// context.DeadlineExceeded.
func TestBackend_Classify_ResponseTimeoutIsRetryable(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}
	b := openAt(t, ts.URL, s3.Config{Bucket: "scripted", HTTPClient: client})
	_, err := b.Stat(t.Context(), "k")
	if !backend.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
}
