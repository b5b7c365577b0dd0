package s3_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/internal/silttest"
)

// staticAWS is an AWS config with fixed credentials, so tests never read
// the developer's environment or reach IMDS.
func staticAWS() *aws.Config { return silttest.StaticAWS() }

// fake is the shared in-process gofakes3 server; each bucket call makes a
// fresh, empty bucket on it.
type fake struct{ *silttest.S3Fake }

func newFake(t testing.TB) fake { return fake{silttest.NewS3Fake(t)} }

func (f fake) bucket(t testing.TB) string { t.Helper(); return f.Bucket(t) }

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
func (f fake) open(t testing.TB, cfg s3.Config) backend.Backend {
	t.Helper()
	if cfg.Bucket == "" {
		cfg.Bucket = f.bucket(t)
	}
	return openAt(t, f.URL, cfg)
}
