package gcs_test

import (
	"context"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
	"github.com/siltsync/silt/internal/silttest"
)

// emulator is the shared in-process fake-gcs-server, with this package's
// way of opening a backend on it.
type emulator struct{ *silttest.GCSFake }

func newEmulator(t testing.TB) emulator { return emulator{silttest.NewGCSFake(t)} }

func (e emulator) hostPort() string  { return e.HostPort() }
func (e emulator) newBucket() string { return e.Bucket() }

// backend opens a backend on a fresh bucket. Conditional delete is off
// because fake-gcs-server v1.56.1 ignores ifGenerationMatch on DELETE
// (TestEmulator_Delete_IgnoresGenerationMatch measures it).
func (e emulator) backend(t testing.TB) backend.Backend {
	t.Helper()
	b, err := newPortable(context.Background(), gcs.Config{Bucket: e.newBucket(), Client: e.Client, NoConditionalDelete: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
