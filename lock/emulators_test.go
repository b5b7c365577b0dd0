package lock_test

import (
	"context"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/internal/silttest"
)

// The emulators start per test, when a factory is first called, so a
// child process of TestMain (which never opens a store) starts none.

// newS3 opens the S3 backend on a fresh gofakes3 bucket. gofakes3 ignores
// If-Match on DeleteObject, hence DisableConditionalDelete.
func newS3(t *testing.T) backend.Backend {
	f := silttest.NewS3Fake(t)
	b, err := s3.New(context.Background(), s3.Config{
		Bucket: f.Bucket(t), Endpoint: f.URL, UsePathStyle: true, DisableConditionalDelete: true,
		AWSConfig: silttest.StaticAWS(),
	})
	if err != nil {
		t.Fatalf("s3.New: %v", err)
	}
	return b
}

// newGCS opens the GCS backend on a fresh fake-gcs-server bucket, which
// ignores ifGenerationMatch on DELETE, hence NoConditionalDelete.
func newGCS(t *testing.T) backend.Backend {
	e := silttest.NewGCSFake(t)
	b, err := gcs.New(context.Background(), gcs.Config{Bucket: e.Bucket(), Client: e.Client, NoConditionalDelete: true})
	if err != nil {
		t.Fatalf("gcs.New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
