package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
)

// optionNoServer points a client at a port nothing listens on.
// newPortable is gcs.New as backend.Open returns it: behind the portable
// checks and transport classification every store shares.
func newPortable(ctx context.Context, cfg gcs.Config) (backend.Backend, error) {
	b, err := gcs.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return backend.Portable(b), nil
}

func optionNoServer() []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint("http://127.0.0.1:1/storage/v1/"), option.WithoutAuthentication()}
}

// scripted answers every request with one status and a JSON API error body,
// so each verb is classified through the real client's own error path.
func scripted(t *testing.T, status int, reason string) backend.Backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"scripted","errors":[{"reason":%q,"message":"scripted"}]}}`, status, reason)
	}))
	t.Cleanup(srv.Close)
	return scriptedClient(t, srv.URL)
}

func scriptedClient(t *testing.T, url string) backend.Backend {
	t.Helper()
	client, err := storage.NewClient(context.Background(), option.WithEndpoint(url+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	b, err := newPortable(context.Background(), gcs.Config{Bucket: "scripted-bucket", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verbs runs each operation once; cond selects the conditional form.
var verbs = []struct {
	name string
	do   func(b backend.Backend, cond bool) error
}{
	{"get", func(b backend.Backend, cond bool) error {
		opts := backend.GetOptions{}
		if cond {
			opts.IfMatch = "7"
		}
		_, _, err := backend.ReadAll(context.Background(), b, "k", opts, 0)
		return err
	}},
	{"put", func(b backend.Backend, cond bool) error {
		c := backend.Cond{}
		if cond {
			c.IfMatch = "7"
		}
		_, err := backend.PutBytes(context.Background(), b, "k", []byte("x"), c)
		return err
	}},
	{"delete", func(b backend.Backend, cond bool) error {
		c := backend.Cond{}
		if cond {
			c.IfMatch = "7"
		}
		return b.Delete(context.Background(), "k", c)
	}},
	{"stat", func(b backend.Backend, _ bool) error { _, err := b.Stat(context.Background(), "k"); return err }},
	{"list", func(b backend.Backend, _ bool) error {
		return b.List(context.Background(), "", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
	}},
}

type want int

const (
	wantPrecondition want = iota
	wantNotExist
	wantRetryable
	wantPermanent
	wantNil
)

func check(t *testing.T, err error, w want, mentions ...string) {
	t.Helper()
	var be *backend.Error
	isBE := errors.As(err, &be)
	ok := false
	switch w {
	case wantPrecondition:
		ok = backend.IsPrecondition(err) && !backend.IsRetryable(err)
	case wantNotExist:
		ok = backend.IsNotExist(err) && !backend.IsRetryable(err)
	case wantRetryable:
		ok = backend.IsRetryable(err)
	case wantPermanent:
		ok = isBE && !backend.IsRetryable(err) && !backend.IsPrecondition(err) && !backend.IsNotExist(err)
	case wantNil:
		ok = err == nil
	}
	if !ok {
		t.Fatalf("error %v (type %T), want class %d", err, err, w)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}

func TestClassify_ScriptedStatuses(t *testing.T) {
	for _, tc := range []struct {
		status   int
		reason   string
		cond     bool
		want     map[string]want // by verb; missing verbs are not run
		mentions []string
	}{
		{412, "conditionNotMet", true, map[string]want{"get": wantPrecondition, "put": wantPrecondition, "delete": wantPrecondition}, nil},
		{404, "notFound", false, map[string]want{"get": wantNotExist, "stat": wantNotExist, "delete": wantNil}, nil},
		// GCS answers a generation condition on a missing object with 404
		// on some paths; either way the caller's version is gone.
		{404, "notFound", true, map[string]want{"get": wantPrecondition, "put": wantPrecondition, "delete": wantPrecondition}, nil},
		{429, "rateLimitExceeded", false, map[string]want{"get": wantRetryable, "put": wantRetryable, "delete": wantRetryable, "stat": wantRetryable, "list": wantRetryable}, nil},
		{429, "rateLimitExceeded", true, map[string]want{"put": wantRetryable}, nil},
		{503, "backendError", false, map[string]want{"get": wantRetryable, "put": wantRetryable, "delete": wantRetryable, "stat": wantRetryable, "list": wantRetryable}, nil},
		{500, "internalError", false, map[string]want{"put": wantRetryable, "stat": wantRetryable}, nil},
		{408, "requestTimeout", false, map[string]want{"put": wantRetryable}, nil},
		{403, "forbidden", false, map[string]want{"get": wantPermanent, "put": wantPermanent, "delete": wantPermanent, "stat": wantPermanent, "list": wantPermanent},
			[]string{"scripted-bucket", "storage.objects."}},
		// Quota errors that the JSON API still reports as 403.
		{403, "userRateLimitExceeded", false, map[string]want{"stat": wantRetryable, "put": wantRetryable}, nil},
		{401, "required", false, map[string]want{"stat": wantPermanent}, []string{"scripted-bucket"}},
		{400, "invalid", false, map[string]want{"put": wantPermanent, "list": wantPermanent}, nil},
	} {
		for _, v := range verbs {
			w, ok := tc.want[v.name]
			if !ok {
				continue
			}
			t.Run(fmt.Sprintf("%d_%s_cond=%v_%s", tc.status, tc.reason, tc.cond, v.name), func(t *testing.T) {
				check(t, v.do(scripted(t, tc.status, tc.reason), tc.cond), w, tc.mentions...)
			})
		}
	}
}

// TestClassify_304OnGetIsNotModified answers a conditional read with 304,
// as GCS does when ifGenerationNotMatch names the current generation, over
// both the client's XML and JSON read paths.
func TestClassify_304OnGetIsNotModified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		opts []option.ClientOption
	}{{"xml", nil}, {"json", []option.ClientOption{storage.WithJSONReads()}}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]option.ClientOption{option.WithEndpoint(srv.URL + "/storage/v1/"), option.WithoutAuthentication()}, tc.opts...)
			client, err := storage.NewClient(context.Background(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			b, err := newPortable(context.Background(), gcs.Config{Bucket: "scripted-bucket", Client: client})
			if err != nil {
				t.Fatal(err)
			}
			rc, _, err := b.Get(context.Background(), "k", backend.GetOptions{IfNoneMatch: "7"})
			if rc != nil {
				rc.Close()
				t.Error("304 returned a reader")
			}
			var be *backend.Error
			if !errors.Is(err, backend.ErrNotModified) || backend.IsRetryable(err) || backend.IsPrecondition(err) || !errors.As(err, &be) {
				t.Fatalf("err = %v, want a permanent *backend.Error matching only ErrNotModified", err)
			}
		})
	}
}

func TestClassify_403NamesPermissionPerVerb(t *testing.T) {
	b := scripted(t, 403, "forbidden")
	perms := map[string]string{"get": "storage.objects.get", "put": "storage.objects.create", "delete": "storage.objects.delete",
		"stat": "storage.objects.get", "list": "storage.objects.list"}
	for _, v := range verbs {
		check(t, v.do(b, false), wantPermanent, perms[v.name])
	}
}

func TestClassify_TransportFailureIsRetryable(t *testing.T) {
	// The server drops every connection without answering.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	b := scriptedClient(t, srv.URL)
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) { check(t, v.do(b, false), wantRetryable) })
	}
	refused := scriptedClient(t, "http://127.0.0.1:1")
	check(t, verbs[3].do(refused, false), wantRetryable)
}

func TestClassify_ContextErrorsUnchanged(t *testing.T) {
	b := scripted(t, 503, "backendError")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Stat(ctx, "k")
	if !errors.Is(err, context.Canceled) || backend.IsRetryable(err) {
		t.Fatalf("stat with cancelled ctx: %v, want context.Canceled, not retryable", err)
	}
	var be *backend.Error
	if errors.As(err, &be) {
		t.Fatalf("context error wrapped as %v; want it returned unchanged", be)
	}
	_, err = b.Put(ctx, "k", bytes.NewReader([]byte("x")), 1, backend.Cond{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("put with cancelled ctx: %v", err)
	}
}

// bucketMissing answers as GCS does for a bucket that does not exist: 404
// for reads and listings alike, the message naming the bucket.
func bucketMissing(t *testing.T) backend.Backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":404,"message":"The specified bucket does not exist.","errors":[{"reason":"notFound","message":"The specified bucket does not exist."}]}}`)
	}))
	t.Cleanup(srv.Close)
	// JSON reads, as gcs.New configures its own client: the XML read
	// path drops the message that names the bucket.
	client, err := storage.NewClient(context.Background(), option.WithEndpoint(srv.URL+"/storage/v1/"), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	b, err := newPortable(context.Background(), gcs.Config{Bucket: "scripted-bucket", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClassify_MissingBucket_IsErrBucketNotFoundNeverNotExist(t *testing.T) {
	b := bucketMissing(t)
	for _, v := range verbs {
		if v.name == "put" || v.name == "delete" {
			continue // writes name no bucket in their 404 handling path
		}
		err := v.do(b, false)
		if !errors.Is(err, backend.ErrBucketNotFound) || errors.Is(err, backend.ErrNotExist) || !strings.Contains(err.Error(), `bucket "scripted-bucket"`) {
			t.Errorf("%s: err = %v, want ErrBucketNotFound naming the bucket, not ErrNotExist", v.name, err)
		}
	}
}
