package lock_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
	"github.com/siltsync/silt/backend/s3"
)

// The emulators start on first use, once per test binary, so a child
// process of TestMain (which never opens a store) starts none; each
// factory call gets its own bucket. stopEmulators runs after m.Run.
var (
	emuOnce  sync.Once
	emuErr   error
	emuStop  []func()
	s3mem1   *s3mem.Backend
	s3URL    string
	gcsSrv   *fakestorage.Server
	gcsCli   *storage.Client
	nBuckets atomic.Int64
)

func startEmulators() {
	s3mem1 = s3mem.New()
	s3srv := httptest.NewServer(gofakes3.New(s3mem1).Server())
	s3URL = s3srv.URL
	emuStop = append(emuStop, s3srv.Close)

	// PublicHost must match the listener, or the client's XML reads
	// (GET /bucket/object) are not routed and 404.
	gcsSrv, emuErr = fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", Host: "127.0.0.1", PublicHost: "127.0.0.1", Writer: io.Discard,
	})
	if emuErr != nil {
		return
	}
	emuStop = append(emuStop, gcsSrv.Stop)
	gcsCli, emuErr = storage.NewClient(context.Background(),
		option.WithEndpoint(gcsSrv.URL()+"/storage/v1/"), option.WithoutAuthentication())
	if emuErr == nil {
		emuStop = append(emuStop, func() { gcsCli.Close() })
	}
}

func stopEmulators() {
	for i := len(emuStop) - 1; i >= 0; i-- {
		emuStop[i]()
	}
}

// emuBucket starts the emulators if need be and names a fresh bucket.
func emuBucket(t *testing.T) string {
	t.Helper()
	emuOnce.Do(startEmulators)
	if emuErr != nil {
		t.Fatalf("start emulators: %v", emuErr)
	}
	return fmt.Sprintf("silt-lock-%d", nBuckets.Add(1))
}

// newS3 opens the S3 backend on a fresh gofakes3 bucket. gofakes3 ignores
// If-Match on DeleteObject, hence DisableConditionalDelete.
func newS3(t *testing.T) backend.Backend {
	name := emuBucket(t)
	if err := s3mem1.CreateBucket(name); err != nil {
		t.Fatalf("gofakes3 CreateBucket: %v", err)
	}
	b, err := s3.New(context.Background(), s3.Config{
		Bucket: name, Endpoint: s3URL, UsePathStyle: true, DisableConditionalDelete: true,
		AWSConfig: &aws.Config{Region: "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider("silt-test-key", "silt-test-secret", "")},
	})
	if err != nil {
		t.Fatalf("s3.New: %v", err)
	}
	return b
}

// newGCS opens the GCS backend on a fresh fake-gcs-server bucket, which
// ignores ifGenerationMatch on DELETE, hence NoConditionalDelete.
func newGCS(t *testing.T) backend.Backend {
	name := emuBucket(t)
	gcsSrv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	b, err := gcs.New(context.Background(), gcs.Config{Bucket: name, Client: gcsCli, NoConditionalDelete: true})
	if err != nil {
		t.Fatalf("gcs.New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
