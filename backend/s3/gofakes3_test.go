package s3_test

import (
	"fmt"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
	"github.com/siltsync/silt/conformance"
)

// TestBackend_Gofakes3_Conformance runs the shared suite against in-process
// gofakes3, a fresh bucket per check. gofakes3 ignores If-Match on DELETE,
// so the backend does not claim ConditionalDelete and the suite checks that
// a conditional delete is refused with ErrNotSupported instead.
func TestBackend_Gofakes3_Conformance(t *testing.T) {
	f := newFake(t)
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		return f.open(t, s3.Config{DisableConditionalDelete: true})
	})
}

// TestBackend_Gofakes3Prefixed_Conformance runs the suite again with every
// check in its own prefix of one shared bucket, as a real deployment does,
// so key prefixing and stripping in List are covered.
func TestBackend_Gofakes3Prefixed_Conformance(t *testing.T) {
	f := newFake(t)
	bucket := f.bucket(t)
	// A neighbour object that sorts inside every check's prefix range but
	// belongs to no check: a List that forgot the prefix would return it.
	other := f.open(t, s3.Config{Bucket: bucket})
	if _, err := backend.PutBytes(t.Context(), other, "pre/0-neighbour", []byte("neighbour"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	var n int
	conformance.RunBackend(t, func(t *testing.T) backend.Backend {
		n++
		return f.open(t, s3.Config{Bucket: bucket, Prefix: fmt.Sprintf("pre/%d", n), DisableConditionalDelete: true})
	})
}

// TestSyncer_Gofakes3_Conformance runs the syncer scenarios (invariants,
// seed bugs, host features) through the S3 backend against gofakes3.
func TestSyncer_Gofakes3_Conformance(t *testing.T) {
	f := newFake(t)
	conformance.RunSyncer(t, func(t *testing.T) backend.Backend {
		return f.open(t, s3.Config{DisableConditionalDelete: true})
	})
}

// TestSyncer_Gofakes3_Multipart round-trips a file above a lowered
// multipart threshold through the syncer: the committed sha256 is the
// file's, however the upload re-reads its parts.
func TestSyncer_Gofakes3_Multipart(t *testing.T) {
	f := newFake(t)
	b := f.open(t, s3.Config{DisableConditionalDelete: true, MultipartThreshold: 5 << 20, PartSize: s3.MinPartSize})
	conformance.CheckSyncerLargeFile(t, b, 12<<20+12345)
}
