package gcs_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
)

func TestOpen_RejectsBadURLs(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1") // never dial real GCS
	for _, tc := range []struct{ url, mentions string }{
		{"gs://bucket?region=x", "region"},
		{"gs:///prefix", "no bucket"},
		{"gs://bucket/a/../b", "invalid key"},
	} {
		if _, err := backend.Open(context.Background(), tc.url); err == nil || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("Open(%q) = %v, want an error mentioning %q", tc.url, err, tc.mentions)
		}
	}
}

// TestOpen_EmulatorHost checks that the opener needs nothing but
// STORAGE_EMULATOR_HOST to reach an emulator, applies the URL's prefix, and
// turns conditional delete off there.
func TestOpen_EmulatorHost(t *testing.T) {
	e := newEmulator(t)
	bucket := e.newBucket()
	t.Setenv("STORAGE_EMULATOR_HOST", e.hostPort())
	ctx := context.Background()
	b, err := backend.Open(ctx, "gs://"+bucket+"/some/prefix")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Capabilities().ConditionalDelete {
		t.Error("ConditionalDelete claimed against an emulator that ignores it")
	}
	info := mustPut(t, b, "k", "v", backend.Cond{IfAbsent: true})
	a, err := e.Client.Bucket(bucket).Object("some/prefix/k").Attrs(ctx)
	if err != nil || string(info.Version) != strings.TrimSpace(itoa(a.Generation)) {
		t.Fatalf("object under prefix: %+v %v; put version %s", a, err, info.Version)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
