package s3_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	s3api "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/probe"
	_ "github.com/siltsync/silt/backend/s3" // registers s3://
	"github.com/siltsync/silt/conformance"
)

// The environment of a run against a real S3-compatible server; see
// README.md ("Testing your store"). Credentials come from the standard AWS chain.
const (
	envEndpoint     = "SILT_TEST_S3_ENDPOINT"      // e.g. http://127.0.0.1:7070; required
	envBucket       = "SILT_TEST_S3_BUCKET"        // required
	envRegion       = "SILT_TEST_S3_REGION"        // default us-east-1
	envParams       = "SILT_TEST_S3_PARAMS"        // extra URL parameters, e.g. conditional_delete=false
	envCreateBucket = "SILT_TEST_S3_CREATE_BUCKET" // "1": create the bucket first
	envRequire      = "SILT_TEST_REQUIRE"          // comma list; "s3" turns a skip into a failure
)

// endpoint is a configured real server, or nil after the test was skipped.
type endpoint struct {
	endpoint, bucket, region string
	params                   url.Values
	run                      string // unique per test binary run
	n                        atomic.Int64
}

func endpointOrSkip(t *testing.T) *endpoint {
	t.Helper()
	for _, v := range []string{envEndpoint, envBucket} {
		if os.Getenv(v) != "" {
			continue
		}
		msg := fmt.Sprintf("%s is not set; set %s and %s (and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) to run against an S3-compatible server", v, envEndpoint, envBucket)
		if slices.Contains(strings.Split(os.Getenv(envRequire), ","), "s3") {
			t.Fatalf("%s contains s3, but %s", envRequire, msg)
		}
		t.Skip(msg)
	}
	e := &endpoint{
		endpoint: os.Getenv(envEndpoint),
		bucket:   os.Getenv(envBucket),
		region:   cmpOr(os.Getenv(envRegion), "us-east-1"),
		run:      fmt.Sprintf("silt-test/%s-%08x", time.Now().UTC().Format("20060102T150405"), rand.Uint32()),
	}
	params, err := url.ParseQuery(os.Getenv(envParams))
	if err != nil {
		t.Fatalf("%s: %v", envParams, err)
	}
	e.params = params
	if os.Getenv(envCreateBucket) == "1" {
		e.createBucket(t)
	}
	return e
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// url is the backend URL for prefix, built as a user would write it, so the
// opener is exercised too.
func (e *endpoint) url(prefix string, extra url.Values) string {
	q := url.Values{"endpoint": {e.endpoint}, "region": {e.region}, "use_path_style": {"true"}}
	for _, vs := range []url.Values{e.params, extra} {
		for k, v := range vs {
			q[k] = v
		}
	}
	return "s3://" + e.bucket + "/" + prefix + "?" + q.Encode()
}

// open returns a backend on a fresh prefix, deleted again when the test ends.
func (e *endpoint) open(t *testing.T, extra url.Values) backend.Backend {
	t.Helper()
	prefix := fmt.Sprintf("%s/%d", e.run, e.n.Add(1))
	b, err := backend.Open(t.Context(), e.url(prefix, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.cleanup(t, prefix) })
	return b
}

// cleanup deletes everything under prefix, so a shared bucket does not
// fill up with test runs.
func (e *endpoint) cleanup(t *testing.T, prefix string) {
	ctx := context.WithoutCancel(t.Context())
	root, err := backend.Open(ctx, e.url("", nil))
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer root.Close()
	var keys []string
	err = root.List(ctx, prefix+"/", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			keys = append(keys, o.Key)
		}
		return nil
	})
	for _, k := range keys {
		err = errors.Join(err, root.Delete(ctx, k, backend.Cond{}))
	}
	if err != nil {
		t.Errorf("cleanup of %s: %v", prefix, err)
	}
}

// createBucket makes the bucket for a throwaway server (versitygw, moto).
// silt itself never creates buckets.
func (e *endpoint) createBucket(t *testing.T) {
	t.Helper()
	cfg, err := awsconfig.LoadDefaultConfig(t.Context(), awsconfig.WithRegion(e.region))
	if err != nil {
		t.Fatal(err)
	}
	client := s3api.NewFromConfig(cfg, func(o *s3api.Options) {
		o.BaseEndpoint = aws.String(e.endpoint)
		o.UsePathStyle = true
	})
	_, err = client.CreateBucket(t.Context(), &s3api.CreateBucketInput{Bucket: &e.bucket})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		t.Fatalf("create bucket %q: %v", e.bucket, err)
	}
}

// TestBackend_Endpoint_Conformance runs the shared suite against the
// server named by SILT_TEST_S3_ENDPOINT, each check on its own prefix.
func TestBackend_Endpoint_Conformance(t *testing.T) {
	e := endpointOrSkip(t)
	conformance.RunBackend(t, func(t *testing.T) backend.Backend { return e.open(t, nil) })
}

// TestBackend_Endpoint_Syncer runs the syncer scenarios against the
// endpoint, each bucket in its own prefix.
func TestBackend_Endpoint_Syncer(t *testing.T) {
	e := endpointOrSkip(t)
	conformance.RunSyncer(t, func(t *testing.T) backend.Backend { return e.open(t, nil) })
}

// TestBackend_Endpoint_Probe requires the capability probe to confirm what
// the configuration claims.
func TestBackend_Endpoint_Probe(t *testing.T) {
	e := endpointOrSkip(t)
	rep, err := probe.Conditional(t.Context(), e.open(t, nil), "probe/scratch")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %+v", rep)
	for _, p := range rep.Problems {
		t.Errorf("probe: the store %s", p)
	}
}

// TestBackend_Endpoint_Multipart checks multipart uploads strictly: the
// version from CompleteMultipartUpload is the object's, and conditions on
// completion hold.
func TestBackend_Endpoint_Multipart(t *testing.T) {
	e := endpointOrSkip(t)
	b := e.open(t, url.Values{"multipart_threshold": {"1"}, "part_size": {fmt.Sprint(5 << 20)}})
	checkMultipart(t, b, true)
}

// TestBackend_Endpoint_SyncerMultipart round-trips a file above the
// multipart threshold through the syncer against the endpoint.
func TestBackend_Endpoint_SyncerMultipart(t *testing.T) {
	e := endpointOrSkip(t)
	b := e.open(t, url.Values{"multipart_threshold": {fmt.Sprint(5 << 20)}, "part_size": {fmt.Sprint(5 << 20)}})
	conformance.CheckSyncerLargeFile(t, b, 12<<20+12345)
}

// TestBackend_Endpoint_Model runs the model-based syncer test against the
// endpoint (SILT_MODEL_BUDGET sequences per mode; .ci/run raises it for
// versitygw).
func TestBackend_Endpoint_Model(t *testing.T) {
	e := endpointOrSkip(t)
	conformance.RunSyncerModel(t, func(t *testing.T) backend.Backend { return e.open(t, nil) }, conformance.ModelBudget{Checks: 8, Steps: 15})
}
