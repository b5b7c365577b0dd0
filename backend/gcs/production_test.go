package gcs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	for name, call := range map[string]func(ctx context.Context) error{
		"Get": func(ctx context.Context) error {
			_, _, err := backend.ReadAll(ctx, b, "k", backend.GetOptions{}, 0)
			return err
		},
		"Stat": func(ctx context.Context) error { _, err := b.Stat(ctx, "k"); return err },
		"List": func(ctx context.Context) error {
			return b.List(ctx, "", backend.ListOptions{}, func([]backend.ObjectInfo) error { return nil })
		},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := call(t.Context())
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v, want well under 5s", took)
			}
			if !errors.Is(err, backend.ErrTimeout) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("err = %v, want a timeout naming %s", err, addr)
			}
		})
	}
}
