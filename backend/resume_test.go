package backend_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

const resumeData = "0123456789abcdefghijklmnopqrstuvwxyz"

// TestRetry_Get_Regression_CutBodyNotRetried: a body that broke (a reset
// mid-download) or ended early (a cut connection) reached the caller; it is
// now resumed, and the caller reads every byte.
func TestRetry_Get_Regression_CutBodyNotRetried(t *testing.T) {
	for _, mode := range []wrap.Mode{wrap.BreakBody, wrap.TruncateBody} {
		t.Run(mode.String(), func(t *testing.T) {
			g := newRig(backend.RetryConfig{})
			silttest.Put(t, g.m, "k", resumeData)
			g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: mode})
			if got := silttest.Read(t, g.r, "k"); got != resumeData {
				t.Fatalf("read %q, want %q", got, resumeData)
			}
			// Half came in the first response, the rest in the second.
			if c := g.c.Counts(); c.Get != 2 || c.BytesDown != int64(len(resumeData)) {
				t.Errorf("counts %+v, want 2 gets and %d bytes down (no byte twice)", c, len(resumeData))
			}
		})
	}
}

// TestRetry_Get_Regression_RangedReadStartedOver: a ranged read (of a pack)
// that broke after N bytes continues from byte N with a range of the same
// version, instead of starting over.
func TestRetry_Get_Regression_RangedReadStartedOver(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	v := silttest.Put(t, g.m, "packs/p", resumeData).Version
	var ranges []backend.Range
	var pins []backend.Version
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: wrap.BreakBody})
	rec := &recording{Backend: g.f, ranges: &ranges, pins: &pins}
	r := backend.RetryWithSleep(rec, backend.RetryConfig{}, g.s.sleep)
	rg := backend.Range{Offset: 10, Length: 20}
	data, _, err := backend.ReadAll(context.Background(), r, "packs/p", backend.GetOptions{Range: &rg}, 0)
	if err != nil || string(data) != resumeData[10:30] {
		t.Fatalf("read %q, %v; want %q", data, err, resumeData[10:30])
	}
	want := []backend.Range{{Offset: 10, Length: 20}, {Offset: 20, Length: 10}}
	if len(ranges) != 2 || ranges[0] != want[0] || ranges[1] != want[1] {
		t.Errorf("ranges asked %v, want %v", ranges, want)
	}
	if len(pins) != 2 || pins[1] != v {
		t.Errorf("resumed Get pinned to %v, want version %s", pins, v)
	}
}

// TestRetry_Get_ResumeOfReplacedObject_Fails: an object replaced between
// the break and the resume is an error, never two versions spliced.
func TestRetry_Get_ResumeOfReplacedObject_Fails(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	silttest.Put(t, g.m, "k", resumeData)
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: wrap.BreakBody})
	rc, _, err := g.r.Get(context.Background(), "k", backend.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, len(resumeData))
	n, _ := io.ReadAtLeast(rc, buf, len(resumeData)/2) // up to the break
	silttest.Put(t, g.m, "k", strings.ToUpper(resumeData))
	_, err = io.ReadFull(rc, buf[n:])
	if !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("err = %v, want ErrPrecondition (object replaced mid-read)", err)
	}
}

// TestRetry_Get_ResumeBudgetCountsSinceProgress: a body that breaks again
// and again, each time after some progress, still completes; one that
// makes no progress runs out of the budget with every failure listed.
func TestRetry_Get_ResumeBudgetCountsSinceProgress(t *testing.T) {
	g := newRig(backend.RetryConfig{Attempts: 2})
	silttest.Put(t, g.m, "k", resumeData)
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Times: 5, Mode: wrap.BreakBody})
	if got := silttest.Read(t, g.r, "k"); got != resumeData {
		t.Fatalf("read %q", got)
	}
	g.f.Reset()
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: wrap.BreakBody})
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 2, Times: 5})
	_, _, err := backend.ReadAll(context.Background(), g.r, "k", backend.GetOptions{}, 0)
	var ae *backend.AttemptsError
	if !errors.As(err, &ae) || len(ae.Failures) != 2 {
		t.Fatalf("err = %v, want an AttemptsError after 2 failures without progress", err)
	}
}

// TestRetry_Regression_SilentEndpointSentOnce: a request to an endpoint
// that accepts connections and never answers timed out once and was not
// resent (the timeout carried the watchdog's context.Canceled, which
// IsRetryable refused). It is now resent within the budget, as is a Get
// whose body stalls.
func TestRetry_Regression_SilentEndpointSentOnce(t *testing.T) {
	g := newRig(backend.RetryConfig{Attempts: 3})
	silttest.Put(t, g.m, "k", resumeData)
	b := backend.RetryWithSleep(backend.Timeout(g.f, 20*time.Millisecond), backend.RetryConfig{Attempts: 3}, g.s.sleep)
	g.f.Add(wrap.Rule{Verb: wrap.VerbStat, Mode: wrap.Stall})
	_, err := b.Stat(context.Background(), "k")
	if !errors.Is(err, backend.ErrTimeout) || !backend.IsRetryable(err) || len(g.f.Requests()) != 3 {
		t.Fatalf("err = %v after %d requests, want a retryable timeout after 3", err, len(g.f.Requests()))
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("err = %v matches context.Canceled: a timeout would read as the caller giving up", err)
	}
	g.f.Reset()
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: wrap.StallBody})
	if got := silttest.Read(t, b, "k"); got != resumeData {
		t.Fatalf("read %q after a stalled body", got)
	}
}

// recording notes the range and version pin of every Get.
type recording struct {
	backend.Backend
	ranges *[]backend.Range
	pins   *[]backend.Version
}

func (r *recording) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if opts.Range != nil {
		*r.ranges = append(*r.ranges, *opts.Range)
	}
	*r.pins = append(*r.pins, opts.IfMatch)
	return r.Backend.Get(ctx, key, opts)
}
