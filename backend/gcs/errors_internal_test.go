package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"syscall"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/siltsync/silt/backend"
)

// TestClassify_Table covers the errors a scripted server cannot produce
// through the client; HTTP statuses are covered end to end in errors_test.go.
func TestClassify_Table(t *testing.T) {
	plain := call{op: "get", bucket: "bkt", key: "k"}
	cond := call{op: "put", bucket: "bkt", key: "k", conditional: true}
	for _, tc := range []struct {
		name      string
		c         call
		err       error
		is        error // nil: no sentinel expected
		retryable bool
		unchanged bool
	}{
		{"nil", plain, nil, nil, false, true},
		{"cancelled", plain, context.Canceled, context.Canceled, false, true},
		{"deadline wrapped by the client", plain, fmt.Errorf("storage: %w", context.DeadlineExceeded), context.DeadlineExceeded, false, true},
		{"object missing", plain, storage.ErrObjectNotExist, backend.ErrNotExist, false, false},
		{"object missing under a generation condition", cond, storage.ErrObjectNotExist, backend.ErrPrecondition, false, false},
		{"bucket missing", plain, storage.ErrBucketNotExist, nil, false, false},
		{"412", cond, &googleapi.Error{Code: 412}, backend.ErrPrecondition, false, false},
		{"304", plain, &googleapi.Error{Code: 304}, backend.ErrNotModified, false, false},
		// A ranged read whose offset is at or past the object's end.
		{"416", plain, &googleapi.Error{Code: 416}, backend.ErrInvalidRange, false, false},
		{"502", plain, &googleapi.Error{Code: 502}, nil, true, false},
		{"connection reset", plain, &url.Error{Op: "Get", URL: "http://x", Err: syscall.ECONNRESET}, nil, true, false},
		{"truncated response", plain, io.ErrUnexpectedEOF, nil, true, false},
		{"unknown", plain, errors.New("storage: something odd"), nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// classify, then the shared transport classifier, as
			// backend.Portable applies them; a context error is the
			// caller's only while its context is done.
			ctx := context.Background()
			if errors.Is(tc.err, context.Canceled) || errors.Is(tc.err, context.DeadlineExceeded) {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				ctx = cctx
			}
			got := backend.ClassifyTransport(ctx, tc.c.op, tc.c.key, classify(tc.c, tc.err))
			if tc.unchanged {
				if got != tc.err {
					t.Fatalf("classify(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			var be *backend.Error
			if !errors.As(got, &be) || be.Op != tc.c.op || be.Key != tc.c.key {
				t.Fatalf("classify(%v) = %#v, want a *backend.Error for %s %q", tc.err, got, tc.c.op, tc.c.key)
			}
			if tc.is != nil && !errors.Is(got, tc.is) {
				t.Errorf("classify(%v) = %v, want errors.Is %v", tc.err, got, tc.is)
			}
			if backend.IsRetryable(got) != tc.retryable {
				t.Errorf("classify(%v): retryable = %v, want %v", tc.err, !tc.retryable, tc.retryable)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("classify(%v) = %v lost the cause", tc.err, got)
			}
		})
	}
}
