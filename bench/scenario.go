package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// ColdFiles and ColdFileSize are the reference benchmark's data set for the
// cold pull and cold push: 1,000 files of 5 KiB.
const (
	ColdFiles    = 1000
	ColdFileSize = 5 << 10
)

// Scenario is one named, repeatable measurement.
type Scenario struct {
	// Name identifies the scenario ("scoped-pull-unchanged").
	Name string
	// Desc says what is measured, in a line.
	Desc string
	// Ref names the comparable scenario of the reference benchmark
	// (docs/host-contract.md section 5.4), if there is one.
	Ref string
	// Scaled scenarios run at any namespace size; the others always at
	// Entries.
	Scaled bool
	// Entries is the size of a scenario that is not Scaled.
	Entries int

	setup func(ctx context.Context, in *Instance) error
}

// Scenarios returns every scenario, scaled ones first.
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name: "scoped-pull-unchanged", Scaled: true, Ref: "8: scoped pull 1/50 models",
			Desc:  "pull scoped to one model (11 files) that has not changed since this cache pulled it",
			setup: setupScopedPullUnchanged,
		},
		{
			Name: "scoped-pull-one-changed", Scaled: true,
			Desc:  "pull scoped to one model after a peer changed one of its files",
			setup: setupScopedPullOneChanged,
		},
		{
			Name: "push-one-changed", Scaled: true, Ref: "2: push 1 modified / 1000",
			Desc:  "write one file of a model pulled by scope, MarkDirty(file), push",
			setup: setupPushOneChanged,
		},
		{
			Name: "pull-one-changed", Scaled: true, Ref: "6: pull 1 changed / 1000",
			Desc:  "unscoped pull into a complete cache after a peer changed one file",
			setup: setupPullOneChanged,
		},
		{
			Name: "noop-pull", Scaled: true, Ref: "7: no-op pull",
			Desc:  "unscoped pull into a complete cache, nothing changed",
			setup: setupNoopPull,
		},
		{
			Name: "noop-push", Scaled: true, Ref: "3: no-op push",
			Desc:  "push with nothing marked dirty",
			setup: setupNoopPush,
		},
		{
			Name: "cold-pull", Entries: ColdFiles, Ref: "5: pull 1000 files (cold)",
			Desc:  "unscoped pull of 1,000 files of 5 KiB into an empty cache",
			setup: setupColdPull,
		},
		{
			Name: "cold-push", Entries: ColdFiles, Ref: "1: push 1000 files (cold)",
			Desc:  "push of 1,000 new files of 5 KiB (one directory mark) to an empty bucket",
			setup: setupColdPush,
		},
	}
}

// Lookup returns the scenario called name.
func Lookup(name string) (Scenario, bool) {
	for _, sc := range Scenarios() {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}

// Instance is a scenario set up at one size in one environment, ready for
// trials: call Prepare then Measure once per trial, and Close at the end.
type Instance struct {
	// Scenario is what this instance runs.
	Scenario Scenario
	// Entries is the namespace size it was seeded with.
	Entries int
	// Setup is how long seeding and setup took.
	Setup time.Duration

	w       *world
	prepare func(ctx context.Context, trial int) error
	measure func(ctx context.Context) (syncer.Stats, error)
	trial   int
}

// Trial is what one measured operation did.
type Trial struct {
	// Stats is what the syncer reported; Stats.Counts are its exact
	// requests per verb.
	Stats syncer.Stats
	// Observed are the same requests as counted outside the syncer, between
	// it and the latency wrapper.
	Observed syncer.RequestCounts
	// DataPuts counts puts (plain or conditional) of data keys, outside
	// silt's own .silt/ directory.
	DataPuts int64
	// Wall is the measured operation's wall time.
	Wall time.Duration
	// CPU is the CPU time (user and system) the whole process used during
	// the measured operation: the syncer and, in process, the bucket (0
	// where the system does not say).
	CPU time.Duration
}

// Setup builds a fresh bucket for sc in env, seeds it with entries entries
// (ignored unless sc.Scaled) and readies the caches the trials use.
func (sc Scenario) Setup(ctx context.Context, env Env, entries int) (*Instance, error) {
	if !sc.Scaled {
		entries = sc.Entries
	}
	if entries <= 0 {
		return nil, fmt.Errorf("bench: %s: entries must be positive", sc.Name)
	}
	w, err := newWorld(env, sc.Name)
	if err != nil {
		return nil, err
	}
	in := &Instance{Scenario: sc, Entries: entries, w: w}
	start := time.Now()
	if err := sc.setup(ctx, in); err != nil {
		w.close()
		return nil, fmt.Errorf("bench: %s at %d: setup: %w", sc.Name, entries, err)
	}
	in.Setup = time.Since(start)
	return in, nil
}

// Prepare does the unmeasured work that precedes the next trial (a peer's
// commit, a local write and its mark, an empty cache).
func (in *Instance) Prepare(ctx context.Context) error {
	in.trial++
	if in.prepare == nil {
		return nil
	}
	if err := in.prepare(ctx, in.trial); err != nil {
		return fmt.Errorf("bench: %s at %d: trial %d: prepare: %w", in.Scenario.Name, in.Entries, in.trial, err)
	}
	return nil
}

// Measure runs the measured operation once, through the latency wrapper.
func (in *Instance) Measure(ctx context.Context) (Trial, error) {
	in.w.obs.Reset()
	start, cpu0 := time.Now(), processCPU()
	st, err := in.measure(ctx)
	wall, cpu := time.Since(start), processCPU()-cpu0
	if err != nil {
		return Trial{}, fmt.Errorf("bench: %s at %d: trial %d: %w", in.Scenario.Name, in.Entries, in.trial, err)
	}
	t := Trial{Stats: st, Observed: observed(in.w.obs.Counts()), Wall: wall, CPU: cpu}
	for _, r := range in.w.obs.Log() {
		if (r.Verb == wrap.VerbPut || r.Verb == wrap.VerbCondPut) && (strings.HasPrefix(r.Key, index.ObjectsPrefix) || strings.HasPrefix(r.Key, index.PacksPrefix)) {
			t.DataPuts++
		}
	}
	return t, nil
}

// Close removes everything the instance made.
func (in *Instance) Close() error { return in.w.close() }

// changed is the content a trial writes to a file: different in size at
// every trial, so that no two trials' writes can look alike to a size and
// mtime check even within one tick of a coarse file system clock.
func changed(p string, trial int) []byte {
	return []byte(p + " trial " + strconv.Itoa(trial) + " " + strings.Repeat("+", trial) + "\n")
}

// want checks an outcome of the measured operation, so a scenario that
// stopped doing what it says fails instead of timing something else.
func want(what string, got, wanted int) error {
	if got != wanted {
		return fmt.Errorf("%s = %d, want %d", what, got, wanted)
	}
	return nil
}

// seeded seeds the instance's namespace from a new cache on the undelayed
// store and returns that cache, the models and the model to scope to (one
// in the middle of the namespace).
func (in *Instance) seeded(ctx context.Context, size int) (*cache, []string, string, error) {
	c, err := in.w.newCache("seed")
	if err != nil {
		return nil, nil, "", err
	}
	models, err := seed(ctx, c, in.Entries, size)
	if err != nil {
		return nil, nil, "", err
	}
	scope := modelPath(models[len(models)/2])
	return c, models, scope, nil
}

// scopedCache opens a new cache and pulls scope into it, undelayed.
func (in *Instance) scopedCache(ctx context.Context, name, scope string) (*cache, error) {
	c, err := in.w.newCache(name)
	if err != nil {
		return nil, err
	}
	st, err := c.pull(ctx, scope)
	if err != nil {
		return nil, err
	}
	if st.Files.Downloaded == 0 {
		return nil, fmt.Errorf("scoped pull of %s downloaded nothing", scope)
	}
	return c, nil
}

// fullCache brings the seeding cache to "pulled everything": a full pull
// that downloads nothing but records every shard as reconciled.
func fullCache(ctx context.Context, c *cache) error {
	st, err := c.pull(ctx)
	if err != nil {
		return err
	}
	return want("setup full pull: downloaded", st.Files.Downloaded, 0)
}

func setupScopedPullUnchanged(ctx context.Context, in *Instance) error {
	seeder, _, scope, err := in.seeded(ctx, 0)
	if err != nil {
		return err
	}
	if err := seeder.remove(); err != nil {
		return err
	}
	r, err := in.scopedCache(ctx, "reader", scope)
	if err != nil {
		return err
	}
	if err := r.measure(); err != nil {
		return err
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := r.pull(ctx, scope)
		if err == nil {
			err = want("downloaded", st.Files.Downloaded, 0)
		}
		return st, err
	}
	return nil
}

func setupScopedPullOneChanged(ctx context.Context, in *Instance) error {
	peer, _, scope, err := in.seeded(ctx, 0)
	if err != nil {
		return err
	}
	r, err := in.scopedCache(ctx, "reader", scope)
	if err != nil {
		return err
	}
	if err := r.measure(); err != nil {
		return err
	}
	file := scope + "/latest"
	in.prepare = func(ctx context.Context, trial int) error {
		return peer.writePush(ctx, file, changed(file, trial))
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := r.pull(ctx, scope)
		if err == nil {
			err = want("downloaded", st.Files.Downloaded, 1)
		}
		return st, err
	}
	return nil
}

func setupPushOneChanged(ctx context.Context, in *Instance) error {
	seeder, _, scope, err := in.seeded(ctx, 0)
	if err != nil {
		return err
	}
	if err := seeder.remove(); err != nil {
		return err
	}
	wr, err := in.scopedCache(ctx, "writer", scope)
	if err != nil {
		return err
	}
	if err := wr.measure(); err != nil {
		return err
	}
	file := scope + "/latest"
	in.prepare = func(ctx context.Context, trial int) error {
		if err := wr.write(file, changed(file, trial)); err != nil {
			return err
		}
		return wr.s.MarkDirty(file)
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := wr.push(ctx)
		if err == nil {
			err = want("uploaded", st.Files.Uploaded, 1)
		}
		return st, err
	}
	return nil
}

func setupPullOneChanged(ctx context.Context, in *Instance) error {
	full, _, scope, err := in.seeded(ctx, 0)
	if err != nil {
		return err
	}
	if err := fullCache(ctx, full); err != nil {
		return err
	}
	if err := full.measure(); err != nil {
		return err
	}
	peer, err := in.scopedCache(ctx, "peer", scope)
	if err != nil {
		return err
	}
	file := scope + "/latest"
	in.prepare = func(ctx context.Context, trial int) error {
		return peer.writePush(ctx, file, changed(file, trial))
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := full.pull(ctx)
		if err == nil {
			err = want("downloaded", st.Files.Downloaded, 1)
		}
		return st, err
	}
	return nil
}

func setupNoopPull(ctx context.Context, in *Instance) error {
	full, _, _, err := in.seeded(ctx, 0)
	if err != nil {
		return err
	}
	if err := fullCache(ctx, full); err != nil {
		return err
	}
	if err := full.measure(); err != nil {
		return err
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := full.pull(ctx)
		if err == nil {
			err = want("downloaded", st.Files.Downloaded, 0)
		}
		return st, err
	}
	return nil
}

func setupNoopPush(ctx context.Context, in *Instance) error {
	seeder, _, scope, err := in.seeded(ctx, 0)
	if err != nil {
		return err
	}
	if err := seeder.remove(); err != nil {
		return err
	}
	wr, err := in.scopedCache(ctx, "writer", scope)
	if err != nil {
		return err
	}
	if err := wr.measure(); err != nil {
		return err
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := wr.push(ctx)
		if err == nil {
			err = want("uploaded", st.Files.Uploaded, 0)
		}
		return st, err
	}
	return nil
}

func setupColdPull(ctx context.Context, in *Instance) error {
	seeder, _, _, err := in.seeded(ctx, ColdFileSize)
	if err != nil {
		return err
	}
	if err := seeder.remove(); err != nil {
		return err
	}
	var r *cache
	in.prepare = func(ctx context.Context, trial int) error {
		if r != nil {
			if err := r.remove(); err != nil {
				return err
			}
		}
		var err error
		if r, err = in.w.newCache("reader"); err != nil {
			return err
		}
		return r.measure()
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := r.pull(ctx)
		if err == nil {
			err = want("downloaded", st.Files.Downloaded, in.Entries)
		}
		return st, err
	}
	return nil
}

func setupColdPush(ctx context.Context, in *Instance) error {
	var wr *cache
	in.prepare = func(ctx context.Context, trial int) error {
		if wr != nil {
			if err := wr.remove(); err != nil {
				return err
			}
		}
		if err := in.w.freshStore(); err != nil {
			return err
		}
		var err error
		if wr, err = in.w.newCache("writer"); err != nil {
			return err
		}
		if _, err := writeModels(wr.dir, in.Entries, ColdFileSize); err != nil {
			return err
		}
		if err := wr.s.MarkDirty(ModelDir); err != nil {
			return err
		}
		return wr.measure()
	}
	in.measure = func(ctx context.Context) (syncer.Stats, error) {
		st, err := wr.push(ctx)
		if err == nil {
			err = want("uploaded", st.Files.Uploaded, in.Entries)
		}
		return st, err
	}
	return nil
}

// observed converts the counts of the observer wrapper to the syncer's
// shape, so both sides of a trial compare field by field.
func observed(c wrap.Counts) syncer.RequestCounts {
	return syncer.RequestCounts{Get: c.Get, Put: c.Put, CondPut: c.CondPut, Delete: c.Delete, List: c.List, Stat: c.Stat, BytesDown: c.BytesDown, BytesUp: c.BytesUp}
}
