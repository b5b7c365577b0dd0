package gcs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/conformance"
)

// TestBackend_Conformance runs the shared suite against an in-process
// fake-gcs-server, one fresh bucket per check. The emulator ignores
// ifGenerationMatch on DELETE, so the backend is built with conditional
// delete off: the Delete_IfMatch checks skip, naming the capability, and
// Delete_IfMatch_NotSupportedWhenNotClaimed checks the refusal instead.
func TestBackend_Conformance(t *testing.T) {
	e := newEmulator(t)
	conformance.RunBackend(t, func(t *testing.T) backend.Backend { return e.backend(t) })
}

// TestBackend_ConformanceEnv runs the suite against the bucket named by
// SILT_TEST_GCS_BUCKET: real GCS with Application Default Credentials, or an
// emulator when STORAGE_EMULATOR_HOST is set. Each check gets a unique
// prefix, deleted afterwards. The backend is opened through its URL, so the
// opener is exercised too.
func TestBackend_ConformanceEnv(t *testing.T) {
	bucket := os.Getenv("SILT_TEST_GCS_BUCKET")
	if bucket == "" {
		if slices.Contains(strings.Split(os.Getenv("SILT_TEST_REQUIRE"), ","), "gcs") {
			t.Fatal("SILT_TEST_GCS_BUCKET is not set, but SILT_TEST_REQUIRE lists gcs")
		}
		t.Skip("SILT_TEST_GCS_BUCKET not set: skipping the GCS conformance run against a real bucket or STORAGE_EMULATOR_HOST")
	}
	run := randomHex(t)
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		prefix := "silt-conformance/" + run + "/" + randomHex(t)
		b, err := backend.Open(t.Context(), "gs://"+bucket+"/"+prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deletePrefix(t, bucket, prefix+"/") })
		return b
	})
}

func randomHex(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// deletePrefix removes what a check left behind in a shared bucket.
func deletePrefix(t *testing.T, bucket, prefix string) {
	ctx := context.Background() // t.Context is already cancelled in Cleanup
	client, err := storage.NewClient(ctx)
	if err != nil {
		t.Errorf("cleanup client: %v", err)
		return
	}
	defer client.Close()
	it := client.Bucket(bucket).Objects(ctx, &storage.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return
		}
		if err != nil {
			t.Errorf("cleanup list %q: %v", prefix, err)
			return
		}
		if err := client.Bucket(bucket).Object(a.Name).Delete(ctx); err != nil && err != storage.ErrObjectNotExist {
			t.Errorf("cleanup delete %q: %v", a.Name, err)
		}
	}
}

// TestSyncer_Conformance runs the syncer scenarios (invariants, seed bugs,
// host features) through the GCS backend against fake-gcs-server.
func TestSyncer_Conformance(t *testing.T) {
	e := newEmulator(t)
	conformance.RunSyncer(t, func(t *testing.T) backend.Backend { return e.backend(t) })
}

// TestSyncer_Model runs the model-based syncer test through the GCS backend
// against fake-gcs-server, a fresh bucket per sequence (a small budget;
// SILT_MODEL_BUDGET raises it).
func TestSyncer_Model(t *testing.T) {
	e := newEmulator(t)
	conformance.RunSyncerModel(t, func(t *testing.T) backend.Backend { return e.backend(t) }, conformance.ModelBudget{Checks: 8, Steps: 15})
}
