package s3_test

import (
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
)

// staticAWS is an AWS config with fixed credentials, so tests never read
// the developer's environment or reach IMDS.
func staticAWS() *aws.Config {
	return &aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("silt-test-key", "silt-test-secret", ""),
	}
}

// fake is one in-process gofakes3 server; each bucket call makes a fresh,
// empty bucket on it.
type fake struct {
	mem *s3mem.Backend
	url string
	n   atomic.Int64
}

func newFake(t testing.TB) *fake {
	t.Helper()
	mem := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	t.Cleanup(srv.Close)
	return &fake{mem: mem, url: srv.URL}
}

func (f *fake) bucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("silt-test-%d", f.n.Add(1))
	if err := f.mem.CreateBucket(name); err != nil {
		t.Fatalf("gofakes3 CreateBucket: %v", err)
	}
	return name
}

// openAt opens cfg against endpoint (a gofakes3 server, a scripted server
// or a proxy), with path-style addressing and fixed credentials.
func openAt(t testing.TB, endpoint string, cfg s3.Config) backend.Backend {
	t.Helper()
	cfg.Endpoint = endpoint
	cfg.UsePathStyle = true
	if cfg.AWSConfig == nil {
		cfg.AWSConfig = staticAWS()
	}
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("s3.New: %v", err)
	}
	// As backend.Open returns it: the portable checks and the transport
	// classification are part of every store.
	return backend.Portable(b)
}

// open returns a backend on a fresh gofakes3 bucket.
func (f *fake) open(t testing.TB, cfg s3.Config) backend.Backend {
	t.Helper()
	if cfg.Bucket == "" {
		cfg.Bucket = f.bucket(t)
	}
	return openAt(t, f.url, cfg)
}
