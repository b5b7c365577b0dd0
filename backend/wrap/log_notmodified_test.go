package wrap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
)

// TestLog_Regression_NotModified_NotAnError checks a conditional Get whose
// cached copy is current (a 304) is logged as not_modified, not error.
func TestLog_Regression_NotModified_NotAnError(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := mem.New()
	info, err := backend.PutBytes(context.Background(), m, "k", []byte("x"), backend.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	b := wrap.Log(m, l)
	if _, _, err := b.Get(context.Background(), "k", backend.GetOptions{IfNoneMatch: info.Version}); !errors.Is(err, backend.ErrNotModified) {
		t.Fatalf("Get IfNoneMatch current version: err = %v, want ErrNotModified", err)
	}
	var r map[string]any
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if r["status"] != "not_modified" || r["err"] != nil {
		t.Errorf("304 logged as %v", r)
	}
}
