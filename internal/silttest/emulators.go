package silttest

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"google.golang.org/api/option"
)

// S3Fake is an in-process gofakes3 server on a real loopback listener, so
// requests (and their cancellation) cross a real HTTP connection.
type S3Fake struct {
	Mem *s3mem.Backend // the server's store, for creating buckets directly
	URL string         // the endpoint, http://127.0.0.1:port
	n   atomic.Int64
}

// NewS3Fake starts a gofakes3 server that stops with the test.
func NewS3Fake(t testing.TB) *S3Fake {
	t.Helper()
	mem := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	t.Cleanup(srv.Close)
	return &S3Fake{Mem: mem, URL: srv.URL}
}

// Bucket creates a fresh, empty bucket and returns its name, so no test
// sees another's objects.
func (f *S3Fake) Bucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("silt-test-%d", f.n.Add(1))
	if err := f.Mem.CreateBucket(name); err != nil {
		t.Fatalf("gofakes3 CreateBucket: %v", err)
	}
	return name
}

// StaticAWS is an AWS config with fixed credentials, so tests never read
// the developer's environment or reach IMDS.
func StaticAWS() *aws.Config {
	return &aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("silt-test-key", "silt-test-secret", ""),
	}
}

// GCSFake is an in-process fake-gcs-server on a real loopback listener,
// with a storage client pointed at it.
type GCSFake struct {
	Server *fakestorage.Server
	Client *storage.Client
	n      atomic.Int64
}

// NewGCSFake starts a fake-gcs-server that stops with the test.
func NewGCSFake(t testing.TB) *GCSFake {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http",
		Host:   "127.0.0.1",
		// Without a PublicHost matching the listener, the client's XML
		// reads (GET /bucket/object) are not routed and 404.
		PublicHost: "127.0.0.1",
		Writer:     io.Discard,
	})
	if err != nil {
		t.Fatalf("start fake-gcs-server: %v", err)
	}
	client, err := storage.NewClient(context.Background(),
		option.WithEndpoint(srv.URL()+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		srv.Stop()
		t.Fatalf("storage client: %v", err)
	}
	t.Cleanup(func() {
		client.Close()
		srv.Stop()
	})
	return &GCSFake{Server: srv, Client: client}
}

// HostPort is the server's address in STORAGE_EMULATOR_HOST form.
func (e *GCSFake) HostPort() string { return e.Server.URL()[len("http://"):] }

// Bucket creates a fresh, empty bucket and returns its name.
func (e *GCSFake) Bucket() string {
	name := fmt.Sprintf("silt-test-%d", e.n.Add(1))
	e.Server.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return name
}
