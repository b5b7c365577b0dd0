package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/siltsync/silt/bench"
)

// expected is what one operation of each scenario must send at 1k entries
// and at 10k, in a bucket of the default format (the log of deltas): the
// hint or the log entries a reader is behind by, the shard GETs a scope
// needs, the data, and for a push the data put, the new shard and the log
// entry's create. dataPuts counts data objects written.
var expected = map[string]struct {
	req      bench.Requests
	dataPuts int64
	bound    int64 // the bound the issue states, when it states one (-1: none)
}{
	"scoped-pull-unchanged": {req: bench.Requests{Get: 1, Total: 1}, bound: 1},
	// the next log entry, the absent one after it, changed shard, file
	"scoped-pull-one-changed": {req: bench.Requests{Get: 4, Total: 4}, bound: -1},
	// the absent next log entry; object, shard, log entry
	"push-one-changed": {req: bench.Requests{Get: 1, CondPut: 3, Total: 4}, dataPuts: 1, bound: 4},
	"pull-one-changed": {req: bench.Requests{Get: 4, Total: 4}, bound: -1},
	"noop-pull":        {req: bench.Requests{Get: 1, Total: 1}, bound: 1},
	"noop-push":        {req: bench.Requests{}, bound: 0},
	// the hint (a checkpoint's root) and its page, one listing of the
	// log's block and the newest entry (cumulative from the checkpoint),
	// the two shards of 1,000 entries (at most 96 KiB of plain JSON each, stored as zstd frames), one ranged
	// read of the one pack of 1,000 files of 5 KiB (zstd frames of 64 KiB
	// of them: under 4 MiB)
	"cold-pull": {req: bench.Requests{Get: 6, List: 1, Total: 7}, bound: -1},
	// manifest (absent), then one key of the history listed to tell an
	// empty bucket from a lost manifest (FORMAT.md, "A missing manifest");
	// the genesis, the pack, the two shards, the log entry, the checkpoint
	"cold-push": {req: bench.Requests{Get: 1, List: 1, CondPut: 7, Total: 9}, dataPuts: 1, bound: -1},
}

// TestScenarios_RequestCounts runs every scenario at 1k entries (mem, no
// latency) and checks its requests exactly, then runs the scaled ones at
// 10k and checks that they cost the same: scoped pulls and pushes are
// O(scope), not O(namespace).
func TestScenarios_RequestCounts(t *testing.T) {
	ctx := context.Background()
	env := bench.Env{Backend: bench.BackendMem, Dir: scratch(t)}
	const trials = 2 // the second trial checks that the cost is steady
	for _, sc := range bench.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			exp, ok := expected[sc.Name]
			if !ok {
				t.Fatalf("no expected counts for scenario %s", sc.Name)
			}
			sizes := []int{1_000}
			if sc.Scaled && !testing.Short() {
				sizes = append(sizes, 10_000)
			}
			var results []bench.Result
			for _, n := range sizes {
				r, err := bench.Run(ctx, sc, env, n, trials)
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, r)
				if r.Mismatch != "" {
					t.Errorf("%d entries: %s", n, r.Mismatch)
				}
				if !r.Deterministic {
					t.Errorf("%d entries: requests differ between trials: %+v", n, r.PerTrial)
				}
				if r.Trials != trials || r.WallMin <= 0 || r.WallMin > r.WallAvg || r.WallAvg > r.WallMax {
					t.Errorf("%d entries: bad summary: trials %d, wall %v/%v/%v", n, r.Trials, r.WallMin, r.WallAvg, r.WallMax)
				}
			}
			base := results[0]
			if base.Requests != exp.req {
				t.Errorf("%d entries: requests %+v, want %+v", base.Entries, base.Requests, exp.req)
			}
			if base.DataPuts != exp.dataPuts {
				t.Errorf("%d entries: data puts %d, want %d", base.Entries, base.DataPuts, exp.dataPuts)
			}
			if exp.bound >= 0 && base.Requests.Total > exp.bound {
				t.Errorf("%d entries: %d requests, the bound is %d", base.Entries, base.Requests.Total, exp.bound)
			}
			if base.Requests.List != exp.req.List {
				t.Errorf("%d entries: %d list requests; silt lists only one key of the history, only when the manifest is absent, and one block of the log on a cold read", base.Entries, base.Requests.List)
			}
			for _, r := range results[1:] {
				if r.Requests != base.Requests || r.DataPuts != base.DataPuts {
					t.Errorf("cost depends on namespace size:\n%6d entries: %+v, %d data puts\n%6d entries: %+v, %d data puts",
						base.Entries, base.Requests, base.DataPuts, r.Entries, r.Requests, r.DataPuts)
				}
			}
		})
	}
}

// TestScenarios_Cold10k_AtMost100Requests pins issue 14's target: a cold
// push and a cold pull of 10k files of 5 KiB cost at most 100 requests
// each (packs: about one request per 16 MiB, plus the index).
func TestScenarios_Cold10k_AtMost100Requests(t *testing.T) {
	if testing.Short() {
		t.Skip("10k files")
	}
	env := bench.Env{Backend: bench.BackendMem, Dir: scratch(t)}
	for _, name := range []string{"cold-push", "cold-pull"} {
		sc, ok := bench.Lookup(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		sc.Scaled = true // run at 10k, not its reference size
		r, err := bench.Run(context.Background(), sc, env, 10_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s of 10k files: %+v", name, r.Requests)
		if r.Requests.Total > 100 {
			t.Errorf("%s of 10k files: %d requests, the target is at most 100", name, r.Requests.Total)
		}
	}
}

// scratch returns a scratch directory for a test whose results do not
// depend on the file system: on tmpfs when there is one, since seeding
// creates tens of thousands of files and a busy disk makes that slow.
func scratch(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "silt-bench-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// TestRun_Latency checks that the latency wrapper is on the measured path
// only: a scoped pull of an unchanged model sends one request, so it takes
// at least one delay, and the seeding of its setup none.
func TestRun_Latency(t *testing.T) {
	sc, ok := bench.Lookup("scoped-pull-unchanged")
	if !ok {
		t.Fatal("scenario missing")
	}
	const delay = 20 * time.Millisecond
	r, err := bench.Run(context.Background(), sc, bench.Env{Latency: delay, Dir: scratch(t)}, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests.Total != 1 || r.WallMin < float64(delay/time.Millisecond) {
		t.Errorf("one request with %v latency took %v ms", delay, r.WallMin)
	}
	// Seeding 100 entries undelayed is far quicker than 100 delays.
	if r.SetupMs > float64(100*delay/time.Millisecond) {
		t.Errorf("setup took %v ms: was it delayed?", r.SetupMs)
	}
}

// benchScenario measures one scenario as a Go benchmark. Sizes above 10k
// run only with SILT_BENCH_LARGE=1; SILT_BENCH_BACKEND=fs and
// SILT_BENCH_LATENCY=10ms change the environment.
func benchScenario(b *testing.B, name string, entries int) {
	if entries > 10_000 && os.Getenv("SILT_BENCH_LARGE") != "1" {
		b.Skipf("%d entries: set SILT_BENCH_LARGE=1", entries)
	}
	sc, ok := bench.Lookup(name)
	if !ok {
		b.Fatalf("no scenario %s", name)
	}
	env := bench.Env{Backend: os.Getenv("SILT_BENCH_BACKEND"), Dir: b.TempDir()}
	if s := os.Getenv("SILT_BENCH_LATENCY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("SILT_BENCH_LATENCY: %v", err)
		}
		env.Latency = d
	}
	ctx := context.Background()
	in, err := sc.Setup(ctx, env, entries)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	var last bench.Trial
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := in.Prepare(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if last, err = in.Measure(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	q := bench.RequestsOf(last.Stats.Counts)
	b.ReportMetric(float64(q.Total), "req/op")
	b.ReportMetric(float64(q.Get), "get/op")
	b.ReportMetric(float64(q.Put+q.CondPut), "put/op")
	b.ReportMetric(float64(last.DataPuts), "dataput/op")
}

// BenchmarkScopedPull_Unchanged_1k measures a scoped pull of an unchanged
// model in a 1k-entry namespace.
func BenchmarkScopedPull_Unchanged_1k(b *testing.B) { benchScenario(b, "scoped-pull-unchanged", 1_000) }

// BenchmarkScopedPull_Unchanged_100k is the same in a 100k-entry namespace.
func BenchmarkScopedPull_Unchanged_100k(b *testing.B) {
	benchScenario(b, "scoped-pull-unchanged", 100_000)
}

// BenchmarkScopedPull_OneChanged_1k measures a scoped pull of a model with
// one file changed by a peer, in a 1k-entry namespace.
func BenchmarkScopedPull_OneChanged_1k(b *testing.B) {
	benchScenario(b, "scoped-pull-one-changed", 1_000)
}

// BenchmarkScopedPull_OneChanged_100k is the same in a 100k-entry namespace.
func BenchmarkScopedPull_OneChanged_100k(b *testing.B) {
	benchScenario(b, "scoped-pull-one-changed", 100_000)
}

// BenchmarkPush_OneChanged_1k measures the push of one changed file in a
// 1k-entry namespace.
func BenchmarkPush_OneChanged_1k(b *testing.B) { benchScenario(b, "push-one-changed", 1_000) }

// BenchmarkPush_OneChanged_100k is the same in a 100k-entry namespace.
func BenchmarkPush_OneChanged_100k(b *testing.B) { benchScenario(b, "push-one-changed", 100_000) }

// BenchmarkPull_OneChanged_1k measures an unscoped pull after a peer
// changed one file, in a 1k-entry namespace.
func BenchmarkPull_OneChanged_1k(b *testing.B) { benchScenario(b, "pull-one-changed", 1_000) }

// BenchmarkPull_OneChanged_100k is the same in a 100k-entry namespace.
func BenchmarkPull_OneChanged_100k(b *testing.B) { benchScenario(b, "pull-one-changed", 100_000) }

// BenchmarkPull_NoOp_1k measures an unscoped pull with nothing changed.
func BenchmarkPull_NoOp_1k(b *testing.B) { benchScenario(b, "noop-pull", 1_000) }

// BenchmarkPull_NoOp_100k is the same in a 100k-entry namespace.
func BenchmarkPull_NoOp_100k(b *testing.B) { benchScenario(b, "noop-pull", 100_000) }

// BenchmarkPush_NoOp_1k measures a push with nothing dirty.
func BenchmarkPush_NoOp_1k(b *testing.B) { benchScenario(b, "noop-push", 1_000) }

// BenchmarkPull_Cold1000 measures a pull of 1,000 files of 5 KiB into an
// empty cache.
func BenchmarkPull_Cold1000(b *testing.B) { benchScenario(b, "cold-pull", bench.ColdFiles) }

// BenchmarkPush_Cold1000 measures a push of 1,000 new files of 5 KiB.
func BenchmarkPush_Cold1000(b *testing.B) { benchScenario(b, "cold-push", bench.ColdFiles) }
