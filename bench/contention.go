package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// ContentionConfig sets up the contention benchmark (issue 12, point 5):
// Models concurrent "steps" on as many models of one cache, each step
// lock, scoped pull, write 1-50 files, push, repeated Rounds times, against
// the same step run alone.
type ContentionConfig struct {
	Models  int           // concurrent steps per round; 7 in the issue
	Rounds  int           // rounds of concurrent steps
	Latency time.Duration // added to every request (0 or 10 ms in the issue)
	// Service runs the steps through silt serve (an in-process server on a
	// Unix socket) instead of the library.
	Service bool
	// Dir is a scratch directory (short: it holds the socket).
	Dir string
}

// ContentionResult is the step overhead (time spent in silt: the step
// minus writing its files) alone and concurrent, in milliseconds.
type ContentionResult struct {
	Via          string  `json:"via"` // "library" or "service"
	LatencyMs    float64 `json:"latency_ms"`
	Models       int     `json:"models"`
	Steps        int     `json:"steps"`
	AloneMedian  float64 `json:"alone_median_ms"`
	AloneP95     float64 `json:"alone_p95_ms"`
	ConcMedian   float64 `json:"concurrent_median_ms"`
	ConcP95      float64 `json:"concurrent_p95_ms"`
	P95VsAlone   float64 `json:"p95_vs_alone"`   // ConcP95 / AloneMedian; target <= 2
	CASPerCommit float64 `json:"cas_per_commit"` // manifest compare-and-swap attempts per commit; target <= 1.5
}

// stepper runs the parts of a step that go through silt.
type stepper interface {
	pull(ctx context.Context, scope string) error
	mark(ctx context.Context, path string) error
	push(ctx context.Context) (syncer.Stats, error)
	close(ctx context.Context) error
}

// casCounter counts conditional writes of the manifest: the commits'
// compare-and-swap attempts.
type casCounter struct {
	backend.Backend
	n atomic.Int64
}

func (c *casCounter) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if key == syncer.InternalDir+"/manifest.json" && !cond.IsZero() {
		c.n.Add(1)
	}
	return c.Backend.Put(ctx, key, body, size, cond)
}

// Contention runs the benchmark on the in-memory store.
func Contention(ctx context.Context, cfg ContentionConfig) (ContentionResult, error) {
	res := ContentionResult{Via: "library", LatencyMs: ms(cfg.Latency), Models: cfg.Models}
	if cfg.Service {
		res.Via = "service"
	}
	store := &casCounter{Backend: wrap.Latency(mem.New(), wrap.LatencyConfig{Delay: cfg.Latency})}
	cache := filepath.Join(cfg.Dir, "c")
	var st stepper
	var err error
	if cfg.Service {
		st, err = serviceStepper(ctx, store, cache)
	} else {
		st, err = libraryStepper(ctx, store, cache)
	}
	if err != nil {
		return res, err
	}
	defer st.close(context.WithoutCancel(ctx))
	step := func(ctx context.Context, model, round int) (time.Duration, bool, error) {
		l, err := lock.New(store, serve.LockPrefix+fmt.Sprintf("m%d", model), lock.Options{TTL: time.Minute})
		if err != nil {
			return 0, false, err
		}
		start := time.Now()
		le, err := l.Acquire(ctx)
		if err != nil {
			return 0, false, err
		}
		defer le.Release(context.WithoutCancel(ctx))
		scope := fmt.Sprintf("data/t/m%d", model)
		if err := st.pull(ctx, scope); err != nil {
			return 0, false, err
		}
		if err := st.mark(ctx, scope); err != nil {
			return 0, false, err
		}
		files := 1 + (model*7+round*13)%50
		wstart := time.Now()
		for f := range files {
			p := filepath.Join(cache, filepath.FromSlash(scope), fmt.Sprintf("r%d/f%d", round, f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return 0, false, err
			}
			if err := os.WriteFile(p, fmt.Appendf(nil, "model %d round %d file %d", model, round, f), 0o644); err != nil {
				return 0, false, err
			}
		}
		writing := time.Since(wstart)
		ps, err := st.push(ctx)
		if err != nil {
			return 0, false, err
		}
		return time.Since(start) - writing, ps.Files.Uploaded+ps.Files.Deleted > 0, nil
	}
	var alone, conc []float64
	commits := 0
	round := 0
	// The step alone: one model at a time.
	for m := range cfg.Models {
		d, committed, err := step(ctx, m, round)
		if err != nil {
			return res, fmt.Errorf("alone, model %d: %w", m, err)
		}
		alone = append(alone, ms(d))
		if committed {
			commits++
		}
	}
	casAlone := store.n.Load()
	commitsAlone := commits
	for range cfg.Rounds {
		round++
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make([]error, cfg.Models)
		for m := range cfg.Models {
			wg.Go(func() {
				d, committed, err := step(ctx, m, round)
				mu.Lock()
				defer mu.Unlock()
				errs[m] = err
				conc = append(conc, ms(d))
				if committed {
					commits++
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return res, fmt.Errorf("round %d: %w", round, err)
		}
	}
	res.Steps = len(conc)
	res.AloneMedian, res.AloneP95 = pct(alone, 50), pct(alone, 95)
	res.ConcMedian, res.ConcP95 = pct(conc, 50), pct(conc, 95)
	if res.AloneMedian > 0 {
		res.P95VsAlone = round3(res.ConcP95 / res.AloneMedian)
	}
	if n := commits - commitsAlone; n > 0 {
		res.CASPerCommit = round3(float64(store.n.Load()-casAlone) / float64(n))
	}
	return res, nil
}

// pct is the p-th percentile by the nearest-rank method.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return round3(s[max(0, min(i, len(s)-1))])
}

type library struct{ s *syncer.Syncer }

func libraryStepper(ctx context.Context, b backend.Backend, dir string) (stepper, error) {
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir})
	if err != nil {
		return nil, err
	}
	return library{s}, nil
}

func (l library) pull(ctx context.Context, scope string) error {
	_, err := l.s.Pull(ctx, syncer.PullOptions{Scope: []string{scope}})
	return err
}
func (l library) mark(ctx context.Context, p string) error { return l.s.MarkDirty(p) }
func (l library) push(ctx context.Context) (syncer.Stats, error) {
	return l.s.Push(ctx, syncer.PushOptions{})
}
func (l library) close(context.Context) error { return l.s.Close() }

type service struct {
	srv    *serve.Server
	c      *serve.Client
	served chan error
}

func serviceStepper(ctx context.Context, b backend.Backend, dir string) (stepper, error) {
	srv, err := serve.Open(ctx, serve.Config{Syncer: syncer.Config{Backend: b, Dir: dir}})
	if err != nil {
		return nil, err
	}
	ln, err := serve.Listen(ctx, dir)
	if err != nil {
		return nil, errors.Join(err, srv.Shutdown(ctx))
	}
	sv := &service{srv: srv, served: make(chan error, 1)}
	go func() { sv.served <- srv.Serve(ln) }()
	sv.c, err = serve.Dial(ctx, dir)
	if err != nil {
		return nil, errors.Join(err, sv.close(ctx))
	}
	return sv, nil
}

func (s *service) pull(ctx context.Context, scope string) error {
	_, err := s.c.Pull(ctx, serve.PullRequest{Scope: []string{scope}})
	return err
}
func (s *service) mark(ctx context.Context, p string) error { return s.c.MarkDirty(ctx, p) }
func (s *service) push(ctx context.Context) (syncer.Stats, error) {
	return s.c.Push(ctx, serve.PushRequest{})
}
func (s *service) close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
