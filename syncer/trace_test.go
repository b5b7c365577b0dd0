package syncer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/frame"
	"github.com/siltsync/silt/syncer"
)

func recorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return rec, tp
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func openTraced(t *testing.T, b backend.Backend, tp *sdktrace.TracerProvider) (*syncer.Syncer, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: b, Dir: dir, Tracer: tp.Tracer("test")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// TestConfig_Tracer_SpansPerOperationAndPhase checks a push and a scoped
// pull each make one span, a child of the caller's span, whose children
// are its phases in order, with the counts as attributes.
func TestConfig_Tracer_SpansPerOperationAndPhase(t *testing.T) {
	rec, tp := recorder(t)
	b := backend.Production(mem.New())
	a, dirA := openTraced(t, b, tp)
	if err := os.MkdirAll(filepath.Join(dirA, "data/m"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"data/m/one", "data/m/two"} {
		if err := os.WriteFile(filepath.Join(dirA, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, host := tp.Tracer("host").Start(t.Context(), "host.step")
	if _, err := a.Push(ctx, syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	other, _ := openTraced(t, b, tp)
	if _, err := other.Pull(ctx, syncer.PullOptions{Scope: []string{"data/m"}}); err != nil {
		t.Fatal(err)
	}
	host.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	var order []string
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
		order = append(order, s.Name())
	}
	hostID := host.SpanContext().SpanID()
	for op, phases := range map[string][]string{
		"silt.push": {"walk", "index", "upload", "commit"},
		"silt.pull": {"manifest", "shards", "walk", "transfer"},
	} {
		s, ok := byName[op]
		if !ok {
			t.Fatalf("no %s span; spans: %v", op, order)
		}
		if s.Parent().SpanID() != hostID {
			t.Errorf("%s: parent %v, want the caller's span %v", op, s.Parent().SpanID(), hostID)
		}
		var got []string
		for _, c := range rec.Ended() {
			if c.Parent().SpanID() == s.SpanContext().SpanID() {
				got = append(got, c.Name())
				if c.StartTime().Before(s.StartTime()) || c.EndTime().After(s.EndTime()) {
					t.Errorf("%s outside its operation's time", c.Name())
				}
			}
		}
		var want []string
		for _, p := range phases {
			want = append(want, op+"."+p)
		}
		if len(got) != len(want) {
			t.Fatalf("%s children = %v, want %v", op, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s children = %v, want %v", op, got, want)
				break
			}
		}
	}
	push, pull := byName["silt.push"], byName["silt.pull"]
	if v, _ := attr(push, "silt.files.uploaded"); v.AsInt64() != 2 {
		t.Errorf("push silt.files.uploaded = %v, want 2", v.AsInt64())
	}
	if v, _ := attr(push, "silt.seq"); v.AsInt64() != 1 {
		t.Errorf("push silt.seq = %v, want 1", v.AsInt64())
	}
	if v, _ := attr(pull, "silt.scope"); v.AsString() != "data/m" {
		t.Errorf("pull silt.scope = %q, want data/m", v.AsString())
	}
	if v, _ := attr(pull, "silt.files.downloaded"); v.AsInt64() != 2 {
		t.Errorf("pull silt.files.downloaded = %v, want 2", v.AsInt64())
	}
	if v, _ := attr(pull, "silt.requests"); v.AsInt64() < 1 {
		t.Errorf("pull silt.requests = %v, want some", v.AsInt64())
	}
	// Both files went up in one pack, in one frame.
	if v, _ := attr(byName["silt.push.upload"], "silt.bytes_up"); v.AsInt64() != int64(len(frame.Encode([]byte("data/m/onedata/m/two"), frame.Zstd))) {
		t.Errorf("push upload phase silt.bytes_up = %v", v.AsInt64())
	}
	for _, s := range rec.Ended() {
		if s.Status().Code == codes.Error {
			t.Errorf("%s: status error %q on a good run", s.Name(), s.Status().Description)
		}
	}
}

// TestConfig_Tracer_ErrorRecorded checks a failed pull's span carries its
// error and status.
func TestConfig_Tracer_ErrorRecorded(t *testing.T) {
	rec, tp := recorder(t)
	f := wrap.Faults(mem.New())
	boom := errors.New("boom: store unreachable")
	f.Add(wrap.Rule{Verb: wrap.VerbGet, Err: backend.Permanent("get", "x", boom)})
	s, _ := openTraced(t, f, tp)
	if _, err := s.Pull(t.Context(), syncer.PullOptions{}); !errors.Is(err, boom) {
		t.Fatalf("pull err = %v, want boom", err)
	}
	var pull sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "silt.pull" {
			pull = sp
		}
	}
	if pull == nil {
		t.Fatal("no silt.pull span")
	}
	if pull.Status().Code != codes.Error || len(pull.Events()) == 0 || pull.Events()[0].Name != "exception" {
		t.Errorf("silt.pull status %v, events %v: want the error recorded", pull.Status(), pull.Events())
	}
}

// TestConfig_NilTracer_NoSpans checks no Tracer means no spans anywhere,
// even under a caller's traced context.
func TestConfig_NilTracer_NoSpans(t *testing.T) {
	rec, tp := recorder(t)
	ctx, host := tp.Tracer("host").Start(t.Context(), "host.step")
	s, err := syncer.Open(ctx, syncer.Config{Backend: mem.New(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Pull(ctx, syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	host.End()
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans ended, want only the host's", n)
	}
}
