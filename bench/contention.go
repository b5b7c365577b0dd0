package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// ContentionConfig sets up the contention benchmark (issue 12, point 5):
// Models concurrent "steps" on as many models of one cache, each step
// lock, scoped pull, write 1-50 files, push, repeated Rounds times, against
// the same steps run one at a time.
type ContentionConfig struct {
	Models  int           // concurrent steps per round; 7 in the issue
	Rounds  int           // rounds of concurrent steps (and as many of lone ones)
	Latency time.Duration // added to every request (0 or 10 ms in the issue)
	// Store is the bucket, empty and used by nobody else; nil means a new
	// in-memory store. StoreName labels it in the result.
	Store     backend.Backend
	StoreName string
	// Service runs the steps through silt serve (an in-process server on a
	// Unix socket, called with the Go client) instead of the library.
	Service bool
	// Dir is a scratch directory (short: it holds the socket).
	Dir string
}

// ContentionResult is the step overhead (time spent in silt: the step
// minus writing its files) alone and concurrent, in milliseconds, and the
// manifest compare-and-swaps the concurrent rounds sent.
type ContentionResult struct {
	Via         string  `json:"via"`   // "library" or "service"
	Store       string  `json:"store"` // mem, fs, versitygw
	LatencyMs   float64 `json:"latency_ms"`
	Models      int     `json:"models"`
	Steps       int     `json:"steps"` // concurrent steps measured (as many alone)
	AloneMedian float64 `json:"alone_median_ms"`
	AloneP95    float64 `json:"alone_p95_ms"`
	ConcMedian  float64 `json:"concurrent_median_ms"`
	ConcP95     float64 `json:"concurrent_p95_ms"`
	P95VsAlone  float64 `json:"p95_vs_alone"` // ConcP95 / AloneMedian; target <= 2
	// Where the concurrent steps spend their time: median ms per phase.
	Alone      StepPhases `json:"alone_phases_median_ms"`
	Concurrent StepPhases `json:"concurrent_phases_median_ms"`
	// CPU time (user and system) of the whole process per step, alone and
	// concurrent: with 7 steps at once, 7 times this must fit in the cores
	// the machine gives the process, or the steps queue for the CPU.
	AloneCPUMs float64 `json:"alone_cpu_per_step_ms"`
	ConcCPUMs  float64 `json:"concurrent_cpu_per_step_ms"`
	// Of the concurrent rounds: pushes that committed, manifest commits
	// they made (distinct sequence numbers: group commit merges pushes),
	// and the conditional writes of the manifest sent (request counter).
	Pushes       int     `json:"pushes"`
	Commits      int     `json:"commits"`
	CASAttempts  int64   `json:"cas_attempts"`
	CASPerCommit float64 `json:"cas_per_commit"` // CASAttempts / Commits; target <= 1.5
	CASPerPush   float64 `json:"cas_per_push"`   // CASAttempts / Pushes
}

// StepPhases splits a step's overhead: taking the model's lock, the
// scoped pull, marking the model dirty, the push (plan, upload, commit).
type StepPhases struct {
	Lock float64 `json:"lock"`
	Pull float64 `json:"pull"`
	Mark float64 `json:"mark"`
	Push float64 `json:"push"`
}

// stepper runs the parts of a step that go through silt.
type stepper interface {
	lock(ctx context.Context, key string) (unlock func(), err error)
	pull(ctx context.Context, scope string) error
	mark(ctx context.Context, path string) error
	push(ctx context.Context, scope string) (syncer.Stats, error)
	close(ctx context.Context) error
}

// casCounter counts conditional writes of the manifest: the commits'
// compare-and-swap attempts.
type casCounter struct {
	backend.Backend
	n atomic.Int64
}

func (c *casCounter) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	_, log := index.ParseLogKey(key)
	if (key == index.ManifestKey || log) && !cond.IsZero() {
		c.n.Add(1) // a commit attempt: the manifest's swap, or a log entry's create
	}
	return c.Backend.Put(ctx, key, body, size, cond)
}

// stepTime is one measured step.
type stepTime struct {
	total, lock, pull, mark, push time.Duration
	committed                     bool
	seq                           uint64
}

// Contention runs the benchmark. Each round runs the Models steps one
// after the other (alone), then all at once (concurrent), so both see a
// cache of the same size.
func Contention(ctx context.Context, cfg ContentionConfig) (ContentionResult, error) {
	res := ContentionResult{Via: "library", Store: cfg.StoreName, LatencyMs: ms(cfg.Latency), Models: cfg.Models}
	if cfg.Service {
		res.Via = "service"
	}
	raw := cfg.Store
	if raw == nil {
		raw = mem.New()
		if res.Store == "" {
			res.Store = BackendMem
		}
	}
	store := &casCounter{Backend: wrap.Latency(raw, wrap.LatencyConfig{Delay: cfg.Latency})}
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
	step := func(ctx context.Context, model, round int) (stepTime, error) {
		var t stepTime
		start := time.Now()
		unlock, err := st.lock(ctx, fmt.Sprintf("m%d", model))
		if err != nil {
			return t, err
		}
		defer unlock()
		t.lock = time.Since(start)
		scope := fmt.Sprintf("data/t/m%d", model)
		p0 := time.Now()
		if err := st.pull(ctx, scope); err != nil {
			return t, err
		}
		t.pull = time.Since(p0)
		m0 := time.Now()
		if err := st.mark(ctx, scope); err != nil {
			return t, err
		}
		t.mark = time.Since(m0)
		files := 1 + (model*7+round*13)%50
		wstart := time.Now()
		for f := range files {
			p := filepath.Join(cache, filepath.FromSlash(scope), fmt.Sprintf("r%d/f%d", round, f))
			if err := writeFile(p, fmt.Sprintf("model %d round %d file %d", model, round, f)); err != nil {
				return t, err
			}
		}
		writing := time.Since(wstart)
		p1 := time.Now()
		ps, err := st.push(ctx, scope)
		if err != nil {
			return t, err
		}
		t.push = time.Since(p1)
		t.total = time.Since(start) - writing
		t.committed, t.seq = ps.Files.Uploaded+ps.Files.Deleted > 0, ps.Seq
		return t, nil
	}
	var alone, conc []stepTime
	var cas int64
	var cpuAlone, cpuConc time.Duration
	for round := range cfg.Rounds {
		// The steps alone: one model at a time.
		c0 := processCPU()
		for m := range cfg.Models {
			t, err := step(ctx, m, 2*round)
			if err != nil {
				return res, fmt.Errorf("alone, round %d, model %d: %w", round, m, err)
			}
			alone = append(alone, t)
		}
		c1 := processCPU()
		cpuAlone += c1 - c0
		before := store.n.Load()
		var wg sync.WaitGroup
		ts := make([]stepTime, cfg.Models)
		errs := make([]error, cfg.Models)
		for m := range cfg.Models {
			wg.Go(func() { ts[m], errs[m] = step(ctx, m, 2*round+1) })
		}
		wg.Wait()
		cpuConc += processCPU() - c1
		if err := errors.Join(errs...); err != nil {
			return res, fmt.Errorf("concurrent round %d: %w", round, err)
		}
		cas += store.n.Load() - before
		conc = append(conc, ts...)
	}
	res.Steps = len(conc)
	at, ct := totals(alone), totals(conc)
	res.AloneMedian, res.AloneP95 = pct(at, 50), pct(at, 95)
	res.ConcMedian, res.ConcP95 = pct(ct, 50), pct(ct, 95)
	if res.AloneMedian > 0 {
		res.P95VsAlone = round3(res.ConcP95 / res.AloneMedian)
	}
	res.Alone, res.Concurrent = phases(alone), phases(conc)
	if len(conc) > 0 {
		res.AloneCPUMs, res.ConcCPUMs = ms(cpuAlone/time.Duration(len(alone))), ms(cpuConc/time.Duration(len(conc)))
	}
	seqs := map[uint64]bool{}
	for _, t := range conc {
		if t.committed {
			res.Pushes++
			seqs[t.seq] = true
		}
	}
	res.Commits, res.CASAttempts = len(seqs), cas
	if res.Commits > 0 {
		res.CASPerCommit = round3(float64(cas) / float64(res.Commits))
	}
	if res.Pushes > 0 {
		res.CASPerPush = round3(float64(cas) / float64(res.Pushes))
	}
	return res, nil
}

func totals(ts []stepTime) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = ms(t.total)
	}
	return out
}

func phases(ts []stepTime) StepPhases {
	var l, p, m, q []float64
	for _, t := range ts {
		l, p, m, q = append(l, ms(t.lock)), append(p, ms(t.pull)), append(m, ms(t.mark)), append(q, ms(t.push))
	}
	return StepPhases{Lock: pct(l, 50), Pull: pct(p, 50), Mark: pct(m, 50), Push: pct(q, 50)}
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

func writeFile(p, body string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(body), 0o644)
}
