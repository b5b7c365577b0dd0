package wrap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
)

func TestLog_EachRequest_OneRecordWithVerbKeyStatusBytesAttempt(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := wrap.Log(mem.New(), l)
	ctx := context.Background()
	if _, err := b.Put(ctx, "k", strings.NewReader("abc"), 3, backend.Cond{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := b.Get(wrap.WithAttempt(ctx, 2), "k", backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	if _, err := b.Stat(ctx, "missing"); !backend.IsNotExist(err) {
		t.Fatalf("stat missing: %v", err)
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		recs = append(recs, m)
	}
	want := []struct {
		verb, key, status string
		bytes, attempt    float64
	}{{"condput", "k", "ok", 3, 1}, {"get", "k", "ok", 3, 2}, {"stat", "missing", "not_exist", 0, 1}}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), buf.String())
	}
	for i, w := range want {
		r := recs[i]
		if r["msg"] != "request" || r["verb"] != w.verb || r["key"] != w.key || r["status"] != w.status || r["bytes"] != w.bytes || r["attempt"] != w.attempt || r["duration"] == nil {
			t.Errorf("record %d = %v, want %+v", i, r, w)
		}
	}
}

func TestLog_RangedGet_RecordsOffsetLengthAndOutcome(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := mem.New()
	if _, err := backend.PutBytes(context.Background(), m, "k", []byte("0123456789"), backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	b := wrap.Log(m, l)
	if _, _, err := backend.ReadAll(context.Background(), b, "k", backend.GetOptions{Range: &backend.Range{Offset: 2, Length: 5}}, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(context.Background(), "k", backend.GetOptions{Range: &backend.Range{Offset: 10, Length: 1}}); !errors.Is(err, backend.ErrInvalidRange) {
		t.Fatalf("range at the end: err = %v, want ErrInvalidRange", err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []map[string]any{
		{"status": "ok", "bytes": 5.0, "offset": 2.0, "length": 5.0},
		{"status": "invalid_range", "bytes": 0.0, "offset": 10.0, "length": 1.0},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, line := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		for k, v := range want[i] {
			if r[k] != v {
				t.Errorf("record %d: %s = %v, want %v (%s)", i, k, r[k], v, line)
			}
		}
	}
}

func TestLog_DebugDisabled_WritesNothing(t *testing.T) {
	var buf bytes.Buffer
	b := wrap.Log(mem.New(), slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if _, err := b.Stat(context.Background(), "k"); !backend.IsNotExist(err) {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q at info", buf.String())
	}
	if u, ok := b.(backend.Unwrapper); !ok || u.Unwrap() == nil {
		t.Error("Log does not unwrap")
	}
}
