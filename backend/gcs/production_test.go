package gcs_test

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/silttest"
)

// TestOpen_GCSHeldOpenSocket_FailsWithinDeadlineNamingEndpoint opens
// gs:// through backend.Open against an emulator address that accepts
// connections and never answers: each verb fails with a timeout naming it.
func TestOpen_GCSHeldOpenSocket_FailsWithinDeadlineNamingEndpoint(t *testing.T) {
	addr := silttest.HeldOpen(t)
	t.Setenv("STORAGE_EMULATOR_HOST", addr)
	b, err := backend.Open(t.Context(), "gs://bkt?timeout=200ms")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	silttest.WantTimeoutEachVerb(t, b, addr)
}
