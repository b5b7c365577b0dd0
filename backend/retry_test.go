package backend_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/silttest"
)

// sleeps is a fake sleep that records each backoff and returns at once.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ds = append(s.ds, d)
	return ctx.Err()
}

func (s *sleeps) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ds)
}

// rig is Retry over Faults over Count over a fresh store: faults look like
// the network to Retry, and the counter sees what reached the store.
type rig struct {
	m backend.Backend
	c *wrap.Counting
	f *wrap.Faulty
	r backend.Backend
	s *sleeps
}

func newRig(cfg backend.RetryConfig) *rig {
	g := &rig{m: mem.New(), s: &sleeps{}}
	g.c = wrap.Count(g.m)
	g.f = wrap.Faults(g.c)
	g.r = backend.RetryWithSleep(g.f, cfg, g.s.sleep)
	return g
}

func TestRetry_Put_RetriesUntilSuccessWithBodyRewound(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	// FailAfter makes the store consume the body each time, so only a
	// rewind to the starting offset stores the right bytes.
	g.f.Add(wrap.Rule{Verb: wrap.VerbPut, Times: 2, Mode: wrap.FailAfter})
	body := strings.NewReader("skip:payload")
	if _, err := body.Seek(5, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	info, err := g.r.Put(context.Background(), "k", body, 7, backend.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if got := silttest.Read(t, g.m, "k"); got != "payload" {
		t.Errorf("stored %q, want payload", got)
	}
	if info.Size != 7 || info.Version == "" {
		t.Errorf("info = %+v, want the last write's", info)
	}
	if got := g.c.Counts().Put; got != 3 {
		t.Errorf("puts sent = %d, want 3", got)
	}
	if g.s.n() != 2 {
		t.Errorf("sleeps = %d, want 2", g.s.n())
	}
}

func TestRetry_ExhaustsAttempts_ExactCount(t *testing.T) {
	for _, attempts := range []int{0, 1, 2, 6} {
		g := newRig(backend.RetryConfig{Attempts: attempts})
		silttest.Put(t, g.m, "k", "v")
		g.f.Add(wrap.Rule{Verb: wrap.VerbStat})
		_, err := g.r.Stat(context.Background(), "k")
		silttest.WantRetryable(t, err, wrap.ErrInjected)
		want := attempts
		if attempts == 0 {
			want = backend.DefaultAttempts
		}
		if got := len(g.f.Requests()); got != want {
			t.Errorf("Attempts %d: sent %d, want %d", attempts, got, want)
		}
		if g.s.n() != want-1 {
			t.Errorf("Attempts %d: slept %d times, want %d", attempts, g.s.n(), want-1)
		}
	}
}

func TestRetry_Backoff_FullJitterWithinCap(t *testing.T) {
	g := newRig(backend.RetryConfig{Attempts: 8, Base: 100 * time.Millisecond, Max: 500 * time.Millisecond})
	silttest.Put(t, g.m, "k", "v")
	g.f.Add(wrap.Rule{Verb: wrap.VerbStat})
	_, _ = g.r.Stat(context.Background(), "k")
	caps := []time.Duration{100, 200, 400, 500, 500, 500, 500}
	if len(g.s.ds) != len(caps) {
		t.Fatalf("slept %d times, want %d", len(g.s.ds), len(caps))
	}
	for i, d := range g.s.ds {
		if limit := caps[i] * time.Millisecond; d < 0 || d > limit {
			t.Errorf("backoff %d = %v, want within [0, %v]", i, d, limit)
		}
	}
}

func TestRetry_NotRetryable_SentOnce(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		err  error // injected; nil means the store's own error
		op   func(b backend.Backend) error
		want error
	}{
		{"precondition from store", nil, func(b backend.Backend) error {
			_, _, err := b.Get(ctx, "k", backend.GetOptions{IfMatch: "stale"})
			return err
		}, backend.ErrPrecondition},
		{"not exist from store", nil, func(b backend.Backend) error {
			_, err := b.Stat(ctx, "missing")
			return err
		}, backend.ErrNotExist},
		{"precondition marked retryable", backend.Retryable("stat", "k", backend.ErrPrecondition), func(b backend.Backend) error {
			_, err := b.Stat(ctx, "k")
			return err
		}, backend.ErrPrecondition},
		{"not modified marked retryable", backend.Retryable("get", "k", backend.ErrNotModified), func(b backend.Backend) error {
			_, _, err := b.Get(ctx, "k", backend.GetOptions{IfNoneMatch: "any"})
			return err
		}, backend.ErrNotModified},
		{"permanent", backend.Permanent("stat", "k", wrap.ErrInjected), func(b backend.Backend) error {
			_, err := b.Stat(ctx, "k")
			return err
		}, wrap.ErrInjected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(backend.RetryConfig{})
			silttest.Put(t, g.m, "k", "v")
			if tt.err != nil {
				g.f.Add(wrap.Rule{Err: tt.err})
			}
			if err := tt.op(g.r); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got := len(g.f.Requests()); got != 1 || g.s.n() != 0 {
				t.Errorf("sent %d, slept %d; want sent once, no sleep", got, g.s.n())
			}
		})
	}
}

func TestRetry_ConditionalWrite_NotResent(t *testing.T) {
	ctx := context.Background()
	g := newRig(backend.RetryConfig{})
	v1 := silttest.Put(t, g.m, "k", "v1")
	// Ack lost: the write lands, and a resend would fail its own IfMatch.
	g.f.Add(wrap.Rule{Verb: wrap.VerbCondPut, Mode: wrap.FailAfter})
	g.f.Add(wrap.Rule{Verb: wrap.VerbDelete})
	_, err := backend.PutBytes(ctx, g.r, "k", []byte("v2"), backend.Cond{IfMatch: v1.Version})
	silttest.WantRetryable(t, err, wrap.ErrInjected)
	if got := silttest.Read(t, g.m, "k"); got != "v2" {
		t.Errorf("k = %q, want v2 from the one attempt", got)
	}
	err = g.r.Delete(ctx, "k", backend.Cond{IfMatch: "any"})
	silttest.WantRetryable(t, err, wrap.ErrInjected)
	if c := g.c.Counts(); c.CondPut != 1 || c.Delete != 0 || g.s.n() != 0 {
		t.Errorf("counts %+v, sleeps %d; want one CondPut, no Delete, no sleep", c, g.s.n())
	}
	// The unconditional delete is retried past the same rule.
	g.f.Reset()
	g.f.Add(wrap.Rule{Verb: wrap.VerbDelete, Nth: 1})
	if err := g.r.Delete(ctx, "k", backend.Cond{}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := backend.Exists(ctx, g.m, "k"); ok {
		t.Error("k not deleted")
	}
}

func TestRetry_ContextCancelledBetweenAttempts_Stops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := silttest.Fill(t, 1)
	f := wrap.Faults(m)
	f.Add(wrap.Rule{Verb: wrap.VerbStat})
	slept := 0
	r := backend.RetryWithSleep(f, backend.RetryConfig{Attempts: 10}, func(ctx context.Context, _ time.Duration) error {
		slept++
		cancel()
		return ctx.Err()
	})
	_, err := r.Stat(ctx, "d/k00")
	if !errors.Is(err, context.Canceled) || backend.IsRetryable(err) {
		t.Fatalf("err = %v, want context.Canceled and not retryable", err)
	}
	if got := len(f.Requests()); got != 1 || slept != 1 {
		t.Errorf("sent %d, slept %d; want 1 and 1", got, slept)
	}
}

func TestRetry_ContextDoneDuringRealBackoff_ReturnsPromptly(t *testing.T) {
	f := wrap.Faults(silttest.Fill(t, 1))
	f.Add(wrap.Rule{Verb: wrap.VerbStat})
	// Hour-long backoffs, many attempts and no operation deadline (which
	// would refuse to wait past itself): only the context ends this.
	r := backend.Retry(f, backend.RetryConfig{Attempts: 100, Base: time.Hour, Max: time.Hour, Deadline: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Stat(ctx, "d/k00"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestRetry_Get_Retried(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	silttest.Put(t, g.m, "k", "hello")
	g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: wrap.FailAfter})
	if got := silttest.Read(t, g.r, "k"); got != "hello" {
		t.Errorf("got %q", got)
	}
	if got := g.c.Counts().Get; got != 2 {
		t.Errorf("gets sent = %d, want 2", got)
	}
}

// TestRetry_Get_RangedStaysRanged: a resent ranged Get asks for the same
// range, so the caller never receives the whole object from a retry.
func TestRetry_Get_RangedStaysRanged(t *testing.T) {
	for _, mode := range []wrap.Mode{wrap.FailBefore, wrap.FailAfter, wrap.BreakBody} {
		t.Run(mode.String(), func(t *testing.T) {
			g := newRig(backend.RetryConfig{})
			v := silttest.Put(t, g.m, "k", "0123456789").Version
			g.f.Add(wrap.Rule{Verb: wrap.VerbGet, Nth: 1, Mode: mode})
			r := backend.Range{Offset: 3, Length: 4}
			data, info, err := backend.ReadAll(context.Background(), g.r, "k", backend.GetOptions{IfMatch: v, Range: &r}, 0)
			// A broken body is resumed with the rest of the range.
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != "3456" || info.Size != 10 || info.Version != v {
				t.Errorf("got %q, Size %d, Version %s; want \"3456\", Size 10, Version %s", data, info.Size, info.Version, v)
			}
			// FailBefore's first attempt never reaches the store.
			want := int64(2)
			if mode == wrap.FailBefore {
				want = 1
			}
			if got := g.c.Counts(); got.Get != want || got.BytesDown > 4*want || mode == wrap.BreakBody && got.BytesDown != 4 {
				t.Errorf("counts %+v, want %d gets and at most %d bytes down (only ranges; a resume only the rest)", got, want, 4*want)
			}
		})
	}
}

// TestRetry_Get_InvalidRangeNotRetried: a range outside the object is an
// answer; resending it would get the same one.
func TestRetry_Get_InvalidRangeNotRetried(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	silttest.Put(t, g.m, "k", "hello")
	_, _, err := g.r.Get(context.Background(), "k", backend.GetOptions{Range: &backend.Range{Offset: 5, Length: 1}})
	if !errors.Is(err, backend.ErrInvalidRange) || backend.IsRetryable(err) {
		t.Fatalf("err = %v, want ErrInvalidRange, not retryable", err)
	}
	if got := g.c.Counts(); got != (wrap.Counts{Get: 1}) || g.s.n() != 0 {
		t.Errorf("counts %+v, slept %d; want one Get, no bytes, no sleep", got, g.s.n())
	}
}

// TestRetry_Get_NotModifiedNotRetried: a conditional read of an unchanged
// object is an answer, not a failure; resending it would get the same one.
func TestRetry_Get_NotModifiedNotRetried(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	v := silttest.Put(t, g.m, "k", "hello").Version
	rc, _, err := g.r.Get(context.Background(), "k", backend.GetOptions{IfNoneMatch: v})
	if rc != nil {
		rc.Close()
		t.Error("Get(IfNoneMatch: current) returned a reader")
	}
	if !errors.Is(err, backend.ErrNotModified) || backend.IsRetryable(err) {
		t.Fatalf("err = %v, want ErrNotModified, not retryable", err)
	}
	if got := g.c.Counts(); got != (wrap.Counts{Get: 1}) || g.s.n() != 0 {
		t.Errorf("counts %+v, slept %d; want one Get, no bytes, no sleep", got, g.s.n())
	}
}

func TestRetry_List_RestartsOnlyBeforeFirstPage(t *testing.T) {
	t.Run("first page fails", func(t *testing.T) {
		f := wrap.Faults(silttest.Fill(t, 7))
		r := backend.RetryWithSleep(f, backend.RetryConfig{}, (&sleeps{}).sleep)
		f.Add(wrap.Rule{Verb: wrap.VerbList, Nth: 1})
		pages, keys, err := silttest.ListPages(r, "d/", 3)
		if err != nil || pages != 3 || keys != 7 || len(f.Requests()) != 4 {
			t.Errorf("pages %d, keys %d, requests %d, err %v; want 3, 7, 4, nil", pages, keys, len(f.Requests()), err)
		}
	})
	t.Run("later page fails", func(t *testing.T) {
		f := wrap.Faults(silttest.Fill(t, 7))
		r := backend.RetryWithSleep(f, backend.RetryConfig{}, (&sleeps{}).sleep)
		f.Add(wrap.Rule{Verb: wrap.VerbList, Nth: 2})
		pages, keys, err := silttest.ListPages(r, "d/", 3)
		silttest.WantRetryable(t, err, wrap.ErrInjected)
		if pages != 1 || keys != 3 || len(f.Requests()) != 2 {
			t.Errorf("pages %d, keys %d, requests %d; want 1, 3, 2", pages, keys, len(f.Requests()))
		}
	})
	t.Run("fn error", func(t *testing.T) {
		f := wrap.Faults(silttest.Fill(t, 7))
		r := backend.RetryWithSleep(f, backend.RetryConfig{}, (&sleeps{}).sleep)
		mine := backend.Retryable("get", "x", errors.New("caller's own"))
		err := r.List(context.Background(), "d/", backend.ListOptions{PageSize: 3}, func([]backend.ObjectInfo) error { return mine })
		if err != mine || len(f.Requests()) != 1 {
			t.Errorf("err %v after %d requests; want fn's error after 1", err, len(f.Requests()))
		}
	})
}

// unseekable fails every Seek, like a stream posing as a ReadSeeker.
type unseekable struct{ io.Reader }

func (unseekable) Seek(int64, int) (int64, error) { return 0, errors.New("not seekable") }

func TestRetry_Put_UnseekableBody_NotResent(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	// FailAfter: the store consumed the body, which cannot be rewound. (A
	// body the store never touched is resent as it is.)
	g.f.Add(wrap.Rule{Verb: wrap.VerbPut, Mode: wrap.FailAfter})
	_, err := g.r.Put(context.Background(), "k", unseekable{bytes.NewReader([]byte("x"))}, 1, backend.Cond{})
	silttest.WantRetryable(t, err, wrap.ErrInjected)
	if got := len(g.f.Requests()); got != 1 || g.s.n() != 0 {
		t.Errorf("sent %d, slept %d; want 1, 0", got, g.s.n())
	}
}

// A best-effort write under SendOnce is sent once and its retryable
// failure returned at once: no wait, no resend (the log's hint, which a
// per-object limit would otherwise hold up a commit on).
func TestRetry_SendOnce_NotResent(t *testing.T) {
	g := newRig(backend.RetryConfig{})
	g.f.Add(wrap.Rule{Verb: wrap.VerbPut, Times: 1, Mode: wrap.FailBefore})
	_, err := g.r.Put(backend.SendOnce(context.Background()), "k", strings.NewReader("v"), 1, backend.Cond{})
	silttest.WantRetryable(t, err, wrap.ErrInjected)
	if got := len(g.f.Requests()); got != 1 {
		t.Errorf("sent %d, want 1", got)
	}
	if g.s.n() != 0 {
		t.Errorf("slept %d times, want 0", g.s.n())
	}
}

// TestAttemptsError_AlikeFailures_NamedOnce: attempts that failed in the
// same words are named once, as [1-3]; different ones keep their own.
func TestAttemptsError_AlikeFailures_NamedOnce(t *testing.T) {
	down, busy := errors.New("connection refused"), errors.New("503 slow down")
	e := &backend.AttemptsError{Op: "get", Key: "k", Failures: []error{busy, down, down}}
	if got, want := e.Error(), `get "k": gave up after 3 attempts: [1] 503 slow down [2-3] connection refused`; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
