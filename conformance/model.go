package conformance

import (
	"context"
	"flag"
	"fmt"
	"github.com/siltsync/silt/internal/legacy"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// ModelBudget bounds one run of the model-based test.
type ModelBudget struct {
	// Checks is the number of generated sequences per mode (owned paths,
	// shared paths; concurrent operations run half as many); 0 means 10.
	// SILT_MODEL_BUDGET=N in the environment replaces it with N, and an
	// explicit -rapid.checks wins over both.
	Checks int
	// Steps is the average number of steps of a sequence; 0 means 20. An
	// explicit -rapid.steps wins.
	Steps int
}

// ModelBudgetEnv is the environment variable that sets ModelBudget.Checks
// for every RunSyncerModel of a test binary, for the larger CI budget.
const ModelBudgetEnv = "SILT_MODEL_BUDGET"

func (b ModelBudget) resolved() ModelBudget {
	if b.Checks <= 0 {
		b.Checks = 10
	}
	if b.Steps <= 0 {
		b.Steps = 20
	}
	if v, err := strconv.Atoi(os.Getenv(ModelBudgetEnv)); err == nil && v > 0 {
		b.Checks = v
	}
	return b
}

// ModelFigures counts what model runs generated, for RELIABILITY.md.
type ModelFigures struct {
	Sequences, Steps, Faults, FaultsFired, Tolerated int64
}

var figures struct {
	sequences, steps, faults, fired, tolerated atomic.Int64
}

// Figures returns the totals of every model run in this process so far.
func Figures() ModelFigures {
	return ModelFigures{figures.sequences.Load(), figures.steps.Load(), figures.faults.Load(), figures.fired.Load(), figures.tolerated.Load()}
}

// RunSyncerModel runs generated sequences of syncer operations against
// stores from newBackend, checking an oracle after every step (see
// model_check.go for the properties). It runs three subtests: Owned, where
// each cache writes only its own models, Shared, where any cache writes
// any path, and Concurrent, Owned with a step that runs 2 or 3 operations
// of one cache's Syncer at once (model_conc.go). A failure prints the seed
// and the shrunk sequence, one line.
// The store must claim ConditionalPut.
func RunSyncerModel(t *testing.T, newBackend Factory, budget ModelBudget) {
	for _, name := range []string{"Owned", "Shared", "Concurrent"} {
		t.Run(name, func(t *testing.T) {
			runModel(t, func() backend.Backend { return newBackend(t) }, name == "Shared", name == "Concurrent", false, budget)
		})
	}
	f := Figures()
	t.Logf("model totals in this process: %d sequences, %d steps, %d faults armed, %d fired, %d tolerated format-1 violations; %s; %s; %s", f.Sequences, f.Steps, f.Faults, f.FaultsFired, f.Tolerated, concTotals(), gcTotals(), writerTotals())
}

// modelTB is what the model needs of its test: rapid's TB plus cleanups
// and a context, which both *testing.T and the CLI's liveT have.
type modelTB interface {
	rapid.TB
	Cleanup(func())
	Context() context.Context
}

func runModel(t modelTB, newStore func() backend.Backend, shared, concurrent, served bool, budget ModelBudget, modes ...func(*modelRun)) {
	t.Helper()
	budget = budget.resolved()
	if concurrent {
		// A concurrent step runs 2 or 3 operations and checks up to 2
		// serial orders: its sequences cost about 3 times the others'.
		budget.Checks = max(1, budget.Checks/2)
	}
	_, isTest := t.(*testing.T)
	live := !isTest
	withRapidBudget(budget, live, func() {
		rapid.Check(t, func(rt *rapid.T) {
			store := newStore()
			if caps := store.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
				t.Skip("backend claims neither ConditionalPut nor AtomicCreate: the syncer commits only under a lock there")
			}
			m := newModelRun(rt, store, shared, concurrent, served)
			for _, mode := range modes {
				mode(m) // model_liveness.go
			}
			figures.sequences.Add(1)
			rt.Repeat(m.actions())
			m.converge()
		})
	})
}

var rapidFlags sync.Mutex

// withRapidBudget sets rapid's checks and steps for one run, unless they
// were given on the command line or in rapid's environment variables. The
// flags are process-wide, so model runs are serialised.
// A live run (the command line) writes no fail file into the working
// directory.
func withRapidBudget(b ModelBudget, live bool, fn func()) {
	rapidFlags.Lock()
	defer rapidFlags.Unlock()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	values := map[string]string{"rapid.checks": strconv.Itoa(b.Checks), "rapid.steps": strconv.Itoa(b.Steps)}
	if live {
		values["rapid.nofailfile"] = "true"
		values["rapid.shrinktime"] = "5s"
	}
	for name, v := range values {
		f := flag.Lookup(name)
		env := "RAPID_" + strings.ToUpper(strings.TrimPrefix(name, "rapid."))
		if _, inEnv := os.LookupEnv(env); f == nil || set[name] || inEnv {
			continue
		}
		old := f.Value.String()
		if err := f.Value.Set(v); err != nil {
			panic(err) // rapid's flags accept these values
		}
		defer func() { _ = f.Value.Set(old) }()
	}
	fn()
}

// The path pool: the model layout of the seeds, data/{type}/{id}/{file},
// with 1- to 3-segment types and a few names that trouble shells and URLs.
// It is small so that writers collide and shards split.
var (
	modelTypes = []string{"t", "deep/er", "a/b/c"}
	modelIDs   = []string{"1", "x y", "-lead", "ünï"}
	modelFileN = []string{"raw", "latest", "s p.json"}
)

func modelDir(ti, ii int) string { return "data/" + modelTypes[ti] + "/" + modelIDs[ii] }

// mcache is one cache: a real directory and a Syncer bound to the bucket
// through Faults and Counting wrappers of its own.
type mcache struct {
	id     int
	dir    string
	cfg    syncer.Config
	s      serve.Cache // the Syncer, or a client of the service serving it
	count  *wrap.Counting
	faults *wrap.Faulty

	marks map[string]bool // paths marked dirty and not settled
	// base is what this cache last synced of each path: its content, or
	// absence. unknown holds paths an interrupted operation left unsure.
	base    map[string]string
	unknown map[string]bool
	seen    uint64 // highest seq this cache has reported
	// failedPush is set while a push of this cache failed after it may
	// have uploaded: format 1 leaves committed objects overwritten then.
	failedPush bool
	lastPull   *pullMemo
	fault      *wrap.Rule // armed for the next operation
	// lazyPaths are paths a MetadataOnly pull recorded without bytes.
	lazyPaths map[string]bool
}

func (c *mcache) lazy() map[string]bool {
	if c.lazyPaths == nil {
		c.lazyPaths = map[string]bool{}
	}
	return c.lazyPaths
}

// pullMemo remembers a clean pull, for the request bound of a repeat.
type pullMemo struct {
	scope   string
	seq     uint64
	entries map[string]remoteEntry
}

// The pack knobs of the model's caches and the largest content it writes.
const (
	modelPackThreshold = 4 << 10
	modelPackSize      = 12 << 10
	modelMaxContent    = 16 << 10
)

type modelRun struct {
	t      *rapid.T
	ctx    context.Context
	shared bool
	store  backend.Backend
	caches []*mcache
	n      int // unique content counter

	written   map[string]map[string]bool // path -> every content written to it
	committed snapshotView
	history   []snapshotView // snapshots seen since the last GC
	log       []string
	tainted   bool // a format-1 violation was tolerated in this sequence
	// concurrent adds the step that runs operations of one cache at once
	// (model_conc.go); trial, when set, collects violations instead of
	// failing, while that step tries one serial order.
	concurrent bool
	trial      *[]string
	// served drives every cache through silt serve (model_serve.go).
	served bool
	// diskFull counts the download writes a full disk failed during the
	// step under way (model_disk.go); op takes them as injected faults.
	diskFull *atomic.Int32
	// live, when set, injects transient faults into every operation and
	// requires each to succeed (model_liveness.go).
	live *liveness
	gc   gcModel // the fake clock and what the concurrent gc needs (model_gc.go)
	// format is the bucket's format: the default, or the one an older
	// silt created it in until a migration step moves it (older).
	format int
	// older is the format (3 or 4) an older silt created the bucket in,
	// through internal/legacy, and its peers commit in; 0: none.
	older int
	// keepLazy makes pulls KeepLazy, as the command line's sync does
	// (actSync sets it around its pull).
	keepLazy bool
}

func newModelRun(t *rapid.T, store backend.Backend, shared, concurrent, served bool) *modelRun {
	m := &modelRun{t: t, ctx: context.Background(), shared: shared, concurrent: concurrent, served: served, store: store, written: map[string]map[string]bool{}}
	m.store = m.gc.init(store)
	m.older = modelOlder(t, store)
	m.format = index.DefaultFormat
	n := rapid.IntRange(2, 4).Draw(t, "caches")
	for i := range n {
		dir, err := os.MkdirTemp("", "silt-model-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		c := &mcache{id: i, dir: dir, marks: map[string]bool{}, base: map[string]string{}, unknown: map[string]bool{}}
		c.count = wrap.Count(cacheStore(m.store, concurrent))
		c.faults = wrap.Faults(c.count)
		c.cfg = syncer.Config{
			// The production stack users get from backend.Open, over the
			// injected faults, as a real network's failures sit under it.
			Backend: backend.Production(c.faults, backend.WithRetry(backend.RetryConfig{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Millisecond})),
			Dir:     dir, Concurrency: 1, ShardMaxEntries: 4, // one transfer at a time: fault positions replay
			Lazy: serve.DefaultLazy, // the layout the oracle predicts MetadataOnly pulls by
			// Small packs, so both storage paths and multi-pack pushes occur.
			PackThreshold: modelPackThreshold, PackSize: modelPackSize,
			// Observations of the log are measured on the model's
			// clock, as gc's ages.
			Now: m.gc.clock.Now,
			// Checkpoints of a delta log within a sequence's few commits.
			CheckpointEvery: modelCheckpointEvery,
		}
		m.open(c)
		t.Cleanup(func() {
			if c.s != nil {
				c.s.Close()
			}
		})
		m.caches = append(m.caches, c)
	}
	if m.older != 0 {
		// An older silt made the bucket: its first commit, empty.
		if _, err := legacy.Push(m.ctx, m.store, m.older, nil); err != nil {
			t.Fatalf("older silt creates the bucket in format %d: %v", m.older, err)
		}
		m.format = m.older
	}
	m.committed = m.snapshot()
	return m
}

func (m *modelRun) open(c *mcache) {
	if m.served {
		m.openServed(c)
		return
	}
	s, err := syncer.Open(m.ctx, c.cfg)
	if err != nil {
		m.t.Fatalf("open cache %d: %v", c.id, err)
	}
	c.s = s
}

// owner is the cache that owns the model (ti, ii) in owned mode.
func (m *modelRun) owner(ti, ii int) int { return (ti*len(modelIDs) + ii) % len(m.caches) }

// ownerOf returns the owner of a data path, or -1 outside the pool.
func (m *modelRun) ownerOf(p string) int {
	for ti := range modelTypes {
		for ii := range modelIDs {
			if inDir(p, modelDir(ti, ii)) {
				return m.owner(ti, ii)
			}
		}
	}
	return -1
}

// owns reports whether c may write p: always with shared paths.
func (m *modelRun) owns(c *mcache, p string) bool { return m.shared || m.ownerOf(p) == c.id }

func inDir(p, dir string) bool { return dir == "" || p == dir || strings.HasPrefix(p, dir+"/") }

// content returns a fresh, unique file content.
func (m *modelRun) content(c *mcache, p string) string {
	m.n++
	s := fmt.Sprintf("c%d w%d %s\n", c.id, m.n, p)
	// Sizes on both sides of the harness's pack threshold, so pushes mix
	// packed and plain contents and fill more than one pack.
	if pad := rapid.IntRange(0, modelMaxContent).Draw(m.t, "pad"); pad > len(s) {
		s += strings.Repeat("x", pad-len(s))
	}
	if m.written[p] == nil {
		m.written[p] = map[string]bool{}
	}
	m.written[p][shaOf([]byte(s))] = true
	m.gc.bodies[shaOf([]byte(s))] = s
	return s
}

func (m *modelRun) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	m.log = append(m.log, line)
	m.t.Log(line)
	figures.steps.Add(1)
}

// sequence is the steps so far, one line, as a failure reports it.
func (m *modelRun) sequence() string { return strings.Join(m.log, "; ") }

// modelCheckpointEvery is how often the model's caches checkpoint a
// DeltaFormat bucket: often, so short sequences read and collect them.
const modelCheckpointEvery = 3

// modelOlder draws whether an older silt created the sequence's bucket,
// and in which format (3, the manifest as commit point; 4, the log of
// whole states; 5, the log of deltas with plain shards), or 0 for a
// bucket this silt creates. The model draws
// nothing else about the format: an older bucket refuses this silt's
// commits until a migration step (model_migrate.go) moves it, while its
// older-silt peers commit beside (actOlderPeer). Format 3 needs
// compare-and-swap; formats 4 and 5 a create-if-absent.
func modelOlder(t *rapid.T, store backend.Backend) int {
	choices := []int{0, 0, 0, index.LogFormat, index.DeltaFormat}
	if store.Capabilities().ConditionalPut {
		choices = append(choices, index.FormatVersion)
	}
	return rapid.SampledFrom(choices).Draw(t, "older")
}
