package conformance

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
)

// propLiveness is the promise the liveness mode adds: a transient fault is
// never an operation's failure.
const propLiveness property = "liveness: with transient faults at a bounded rate, every operation succeeds within the retry budget"

// liveModes are the faults a real store and network produce, as the
// production stack sees them: refused before sending (503, 429, a reset
// before the request went out), lost after applying (a reset instead of
// the answer, or instead of a 412), a request held past the timeout, and
// a body that breaks, ends early or stalls halfway.
var liveModes = []wrap.Mode{wrap.FailBefore, wrap.FailAfter, wrap.Stall, wrap.BreakBody, wrap.TruncateBody, wrap.StallBody}

// liveMaxRun bounds consecutive faulted requests inside the retry budget,
// the tightest part of it included (3 timeouts, see backend.Retry): "a
// bounded rate per request" means no request fails every one of its
// attempts.
const liveMaxRun = 2

// liveTimeout is the per-attempt bound of the liveness caches (first byte
// and stall alike): a stall costs this much, and a slow machine's
// spurious timeouts are only more transient faults. The operation
// deadline stays the default, far above the few stalls a request meets.
const liveTimeout = 100 * time.Millisecond

var liveFigures struct{ sequences, ops, faulted, injected atomic.Int64 }

// RunSyncerModelLiveness runs the model of [RunSyncerModel] (its Owned and
// Shared modes) with transient faults injected under every cache's
// production stack at a rate drawn per sequence (5 to 30 % of requests),
// instead of one armed fault whose failure is accepted. Every operation
// must succeed (propLiveness) and then pass every check a fault-free
// operation does, the request bounds apart.
func RunSyncerModelLiveness(t *testing.T, newBackend Factory, budget ModelBudget) {
	for _, name := range []string{"Owned", "Shared"} {
		t.Run(name, func(t *testing.T) {
			runModel(t, func() backend.Backend { return newBackend(t) }, name == "Shared", false, false, budget, withLiveness)
		})
	}
	if liveFigures.injected.Load() == 0 {
		t.Error("liveness: no fault was injected; the run proved nothing")
	}
	t.Logf("liveness totals in this process: %d sequences, %d operations, %d with faults, %d faults injected",
		liveFigures.sequences.Load(), liveFigures.ops.Load(), liveFigures.faulted.Load(), liveFigures.injected.Load())
}

// liveness is a modelRun's fault source: one draw per request, shared by
// the caches' injectors.
type liveness struct {
	rate float64
	mu   sync.Mutex
	rng  *rand.Rand
	pick wrap.Mode // this request's fault; -1 for none
	run  int       // consecutive requests drawn a fault
}

// withLiveness turns a model run into a liveness run: caches reopened over
// the production stack with a short timeout, no armed faults, and the
// fault source installed before every operation.
func withLiveness(m *modelRun) {
	l := &liveness{
		rate: float64(rapid.IntRange(5, 30).Draw(m.t, "faultPercent")) / 100,
		rng:  rand.New(rand.NewPCG(rapid.Uint64().Draw(m.t, "faultSeed"), 0)),
		pick: -1,
	}
	// Liveness is about faults, not formats: every operation must succeed,
	// so an older silt's bucket is migrated first.
	m.migrateNow("a liveness run")
	m.live = l
	liveFigures.sequences.Add(1)
	m.logf("liveness: faults on %.0f%% of requests", l.rate*100)
	for _, c := range m.caches {
		if err := c.s.Close(); err != nil {
			m.t.Fatalf("close cache %d: %v", c.id, err)
		}
		// The stack users get, with backoffs short enough for a test.
		c.cfg.Backend = backend.Production(c.faults, backend.WithFirstByteTimeout(liveTimeout), backend.WithStallTimeout(liveTimeout),
			backend.WithRetry(backend.RetryConfig{Base: time.Millisecond, Max: 2 * time.Millisecond}))
		m.open(c)
	}
}

// arm installs the fault source on c's injector for one operation.
func (l *liveness) arm(c *mcache) {
	c.faults.Add(wrap.Rule{Match: l.draw})
	for _, mode := range liveModes {
		r := wrap.Rule{Mode: mode, Match: func(wrap.Verb, string) bool { return l.pick == mode }}
		if mode == wrap.BreakBody || mode == wrap.TruncateBody || mode == wrap.StallBody {
			r.Verb = wrap.VerbGet
		}
		c.faults.Add(r)
	}
}

// draw picks this request's fault and never fires itself; the rules after
// it fire on the pick. The injector calls it with its lock held, before
// the others.
func (l *liveness) draw(wrap.Verb, string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pick = -1
	if l.rng.Float64() < l.rate && l.run < liveMaxRun {
		l.pick = liveModes[l.rng.IntN(len(liveModes))]
		l.run++
	} else {
		l.run = 0
	}
	return false
}

// settle checks an operation of a liveness run: it must have succeeded.
// A success after faults is then checked as a fault-free one, except for
// the request bounds (retries cost requests).
func (l *liveness) settle(m *modelRun, c *mcache, o opOut) opOut {
	liveFigures.ops.Add(1)
	if !o.fired {
		return o
	}
	liveFigures.faulted.Add(1)
	liveFigures.injected.Add(int64(o.faults))
	m.expect(propLiveness, o.err == nil, "c%d: operation failed after %d transient faults: %v", c.id, o.faults, o.err)
	o.fired, o.retried = false, true
	return o
}
