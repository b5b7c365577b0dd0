package s3_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/silttest"
)

// staticEnv points the AWS default chain at fixed credentials only, as a
// user's environment would, so backend.Open is tested as users run it.
func staticEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "silt-test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "silt-test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
}

// openURL opens an s3:// URL on endpoint through backend.Open, the
// production path.
func openURL(t *testing.T, endpoint, params string) backend.Backend {
	t.Helper()
	staticEnv(t)
	b, err := backend.Open(t.Context(), "s3://bkt?use_path_style=true&endpoint="+endpoint+params)
	if err != nil {
		t.Fatalf("backend.Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// flaky answers each kind of request wrongly once, as a store under load
// does, then correctly.
type flaky struct {
	t    *testing.T
	mu   sync.Mutex
	hits map[string]int
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	kind := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.hits[kind]++
	first := f.hits[kind] == 1
	f.mu.Unlock()
	xmlErr := func(status int, code string) { silttest.S3Error(w, status, code) }
	switch {
	case kind == "GET /bkt/.silt/manifest" && first:
		xmlErr(http.StatusServiceUnavailable, "SlowDown")
	case kind == "GET /bkt/.silt/manifest":
		w.Header().Set("ETag", `"m1"`)
		w.Header().Set("Content-Length", "8")
		_, _ = io.WriteString(w, "manifest")
	case kind == "GET /bkt" && first:
		xmlErr(http.StatusTooManyRequests, "TooManyRequests")
	case kind == "GET /bkt":
		w.Header().Set("Content-Type", "application/xml")
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name><Prefix>data/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>data/a</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>"a1"</ETag><Size>1</Size></Contents></ListBucketResult>`)
	case kind == "HEAD /bkt/data/a" && first:
		silttest.ResetConnection(f.t, w)
	case kind == "HEAD /bkt/data/a":
		w.Header().Set("ETag", `"a1"`)
		w.Header().Set("Content-Length", "1")
	default:
		xmlErr(http.StatusNotImplemented, "NotImplemented")
	}
}

// TestOpen_S3TransientFailures_PullLikeReadsSucceed sends a pull's reads
// through backend.Open and the real SDK (one attempt per request, as
// configured) to a store that answers 503 SlowDown, 429 and a connection
// reset once each: Retry in the production stack absorbs all three.
func TestOpen_S3TransientFailures_PullLikeReadsSucceed(t *testing.T) {
	f := &flaky{t: t, hits: map[string]int{}}
	ts := httptest.NewServer(f)
	defer ts.Close()
	b := openURL(t, ts.URL, "")
	ctx := t.Context()

	data, _, err := backend.ReadAll(ctx, b, ".silt/manifest", backend.GetOptions{}, 0)
	if err != nil || string(data) != "manifest" {
		t.Fatalf("Get manifest after a 503: %q, %v", data, err)
	}
	n := 0
	if err := b.List(ctx, "data/", backend.ListOptions{}, func(p []backend.ObjectInfo) error { n += len(p); return nil }); err != nil || n != 1 {
		t.Fatalf("List after a 429: %d objects, %v", n, err)
	}
	if _, err := b.Stat(ctx, "data/a"); err != nil {
		t.Fatalf("Stat after a connection reset: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range []string{"GET /bkt/.silt/manifest", "GET /bkt", "HEAD /bkt/data/a"} {
		if f.hits[k] != 2 {
			t.Errorf("%s: %d requests, want 2 (one failure, one resend)", k, f.hits[k])
		}
	}
}

func TestOpen_S3HeldOpenSocket_FailsWithinDeadlineNamingEndpoint(t *testing.T) {
	addr := silttest.HeldOpen(t)
	b := openURL(t, "http://"+addr, "&timeout=200ms")
	silttest.WantTimeoutEachVerb(t, b, addr)
}

func TestOpen_S3NoCredentials_SaysWhereSiltLooked(t *testing.T) {
	staticEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request was sent without credentials: %s %s", r.Method, r.URL)
	}))
	defer ts.Close()
	b, err := backend.Open(t.Context(), "s3://bkt?use_path_style=true&endpoint="+ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Stat(t.Context(), "k")
	if !errors.Is(err, backend.ErrCredentials) || backend.IsRetryable(err) {
		t.Fatalf("err = %v, want a permanent ErrCredentials", err)
	}
	for _, want := range []string{"no AWS credentials found", "AWS_ACCESS_KEY_ID", "/dev/null", "profile default", "IMDS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to mention %q", err, want)
		}
	}
}

func TestOpen_S3EndpointRefused_NamesEndpoint(t *testing.T) {
	addr := silttest.RefusedAddr(t)
	b := openURL(t, "http://"+addr, "")
	_, err := b.Stat(t.Context(), "k")
	if !errors.Is(err, backend.ErrUnreachable) || !strings.Contains(err.Error(), "cannot connect to s3 endpoint http://"+addr) {
		t.Fatalf("err = %v, want ErrUnreachable naming http://%s", err, addr)
	}
}

func TestOpen_S3UntrustedCertificate_IsPermanentTLSFailure(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ts.Close()
	ts.Config.ErrorLog = nil
	b := openURL(t, ts.URL, "")
	_, err := b.Stat(t.Context(), "k")
	if !errors.Is(err, backend.ErrTLS) || backend.IsRetryable(err) || !strings.Contains(err.Error(), ts.URL) {
		t.Fatalf("err = %v, want a permanent ErrTLS naming %s", err, ts.URL)
	}
	if strings.Contains(err.Error(), "gave up after") {
		t.Errorf("a TLS failure was retried: %v", err)
	}
}

// TestOpen_S3EndpointRefused_SaysItOnceInTheNetworksWords is issue 37's
// newcomer finding: each attempt repeated the SDK's wrapping (operation
// error S3: GetObject, exceeded maximum number of attempts, 1, https
// response error StatusCode: 0, RequestID: , ...) around the one fact.
func TestOpen_S3EndpointRefused_SaysItOnceInTheNetworksWords(t *testing.T) {
	addr := silttest.RefusedAddr(t)
	b := openURL(t, "http://"+addr, "")
	_, err := b.Stat(t.Context(), "k")
	msg := fmt.Sprint(err)
	if n := strings.Count(msg, "connection refused"); n != 1 {
		t.Errorf("%q says connection refused %d times, want once", msg, n)
	}
	for _, noise := range []string{"operation error", "RequestID", "exceeded maximum number of attempts"} {
		if strings.Contains(msg, noise) {
			t.Errorf("%q repeats the SDK's %q", msg, noise)
		}
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("%v no longer unwraps to ECONNREFUSED", err)
	}
}

// TestOpen_S3NoCredentials_NoSDKWarningFirst is issue 37's newcomer
// finding: without credentials the SDK printed "WARN falling back to
// IMDSv1" on stderr before silt's own error.
func TestOpen_S3NoCredentials_NoSDKWarningFirst(t *testing.T) {
	staticEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden) // no token: the SDK falls back to IMDSv1
	}))
	defer imds.Close()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = stderr }()
	b, err := backend.Open(t.Context(), "s3://bkt?use_path_style=true&endpoint=http://"+silttest.RefusedAddr(t))
	if err == nil {
		_, err = b.Stat(t.Context(), "k")
		b.Close()
	}
	os.Stderr = stderr
	w.Close()
	printed, _ := io.ReadAll(r)
	if !errors.Is(err, backend.ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	if len(printed) > 0 {
		t.Errorf("the SDK printed on stderr: %q", printed)
	}
}
