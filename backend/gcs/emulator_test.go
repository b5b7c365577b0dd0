package gcs_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
)

// emulator is an in-process fake-gcs-server on a real loopback listener, so
// requests (and their cancellation) cross a real HTTP connection.
type emulator struct {
	srv     *fakestorage.Server
	client  *storage.Client
	buckets atomic.Int64
}

func newEmulator(t testing.TB) *emulator {
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
	return &emulator{srv: srv, client: client}
}

// hostPort is the emulator's address in STORAGE_EMULATOR_HOST form.
func (e *emulator) hostPort() string { return e.srv.URL()[len("http://"):] }

// newBucket creates a fresh, empty bucket so no test sees another's objects.
func (e *emulator) newBucket() string {
	name := fmt.Sprintf("silt-test-%d", e.buckets.Add(1))
	e.srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return name
}

// backend opens a backend on a fresh bucket. Conditional delete is off
// because fake-gcs-server v1.56.1 ignores ifGenerationMatch on DELETE
// (TestEmulator_Delete_IgnoresGenerationMatch measures it).
func (e *emulator) backend(t testing.TB) backend.Backend {
	t.Helper()
	b, err := newPortable(context.Background(), gcs.Config{Bucket: e.newBucket(), Client: e.client, NoConditionalDelete: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
