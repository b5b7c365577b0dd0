package wrap

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
)

// Log returns a backend that writes one debug record to l per request
// (per page for List, when the reader is closed for Get): the verb, the
// key, the outcome, the duration, the payload bytes and the attempt (see
// [WithAttempt]). Place it directly over the store, below [Retry], so each
// attempt is a record of its own. A nil l, or one with debug disabled,
// costs one Enabled check per request.
func Log(b backend.Backend, l *slog.Logger) backend.Backend {
	return &logging{Backend: b, l: l}
}

type logging struct {
	backend.Backend
	l *slog.Logger
}

var _ backend.Backend = (*logging)(nil)

// Unwrap returns the wrapped backend.
func (g *logging) Unwrap() backend.Backend { return g.Backend }

type attemptKey struct{}

// WithAttempt returns ctx carrying the attempt number (1 for the first
// send) that [Log] reports; a retrying wrapper sets it before each send.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

func attemptOf(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}

// outcome names a request's result without its message.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, backend.ErrNotExist):
		return "not_exist"
	case errors.Is(err, backend.ErrPrecondition):
		return "precondition_failed"
	case errors.Is(err, backend.ErrInvalidRange):
		return "invalid_range"
	case errors.Is(err, backend.ErrNotModified):
		return "not_modified" // a cached copy is current (HTTP 304): no failure
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "error"
}

func (g *logging) enabled(ctx context.Context) bool {
	return g.l != nil && g.l.Enabled(ctx, slog.LevelDebug)
}

func (g *logging) record(ctx context.Context, v Verb, key string, start time.Time, bytes int64, err error, extra ...slog.Attr) {
	attrs := []slog.Attr{
		slog.String("verb", string(v)), slog.String("key", key), slog.String("status", outcome(err)),
		slog.Duration("duration", time.Since(start)), slog.Int64("bytes", bytes), slog.Int("attempt", attemptOf(ctx)),
	}
	if err != nil && outcome(err) == "error" {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	g.l.LogAttrs(ctx, slog.LevelDebug, "request", append(attrs, extra...)...)
}

func (g *logging) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if !g.enabled(ctx) {
		return g.Backend.Get(ctx, key, opts)
	}
	var extra []slog.Attr
	if r := opts.Range; r != nil {
		extra = []slog.Attr{slog.Int64("offset", r.Offset), slog.Int64("length", r.Length)}
	}
	start := time.Now()
	rc, info, err := g.Backend.Get(ctx, key, opts)
	if err != nil {
		g.record(ctx, VerbGet, key, start, 0, err, extra...)
		return rc, info, err
	}
	return &loggedBody{ReadCloser: rc, done: func(n int64, rerr error) { g.record(ctx, VerbGet, key, start, n, rerr, extra...) }}, info, nil
}

// loggedBody records a Get when its reader is closed, with the bytes read.
type loggedBody struct {
	io.ReadCloser
	n    int64
	err  error
	once sync.Once
	done func(n int64, err error)
}

func (b *loggedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

func (b *loggedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.done(b.n, b.err) })
	return err
}

func (g *logging) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if !g.enabled(ctx) {
		return g.Backend.Put(ctx, key, body, size, cond)
	}
	start := time.Now()
	info, err := g.Backend.Put(ctx, key, body, size, cond)
	g.record(ctx, putVerb(cond), key, start, size, err)
	return info, err
}

func (g *logging) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if !g.enabled(ctx) {
		return g.Backend.Delete(ctx, key, cond)
	}
	start := time.Now()
	err := g.Backend.Delete(ctx, key, cond)
	g.record(ctx, VerbDelete, key, start, 0, err)
	return err
}

func (g *logging) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if !g.enabled(ctx) {
		return g.Backend.Stat(ctx, key)
	}
	start := time.Now()
	info, err := g.Backend.Stat(ctx, key)
	g.record(ctx, VerbStat, key, start, 0, err)
	return info, err
}

func (g *logging) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	if !g.enabled(ctx) {
		return g.Backend.List(ctx, prefix, opts, fn)
	}
	start, pages := time.Now(), 0
	err := g.Backend.List(ctx, prefix, opts, func(page []backend.ObjectInfo) error {
		g.record(ctx, VerbList, prefix, start, 0, nil, slog.Int("page", pages+1), slog.Int("objects", len(page)))
		pages++
		start = time.Now()
		return fn(page)
	})
	if err != nil || pages == 0 {
		g.record(ctx, VerbList, prefix, start, 0, err, slog.Int("page", pages+1), slog.Int("objects", 0))
	}
	return err
}
