package bench_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/siltsync/silt/bench"
)

// TestCPUPerFile_ColdPull10k reports the process's CPU time per file of a
// cold pull of 10k files of 5 KiB (issue 23), on the fs and mem buckets,
// into caches on the real disk (not tmpfs: fsync must cost what it costs).
// It is a measurement, not a check: it runs only when SILT_BENCH_CPU is
// set, and SILT_BENCH_CPUPROFILE=file writes CPU profiles (file.1, file.2, ...) of the
// measured pulls alone (not the seeding).
func TestCPUPerFile_ColdPull10k(t *testing.T) {
	if os.Getenv("SILT_BENCH_CPU") == "" {
		t.Skip("a measurement: set SILT_BENCH_CPU=1")
	}
	const files, trials = 10_000, 3
	sc, ok := bench.Lookup("cold-pull")
	if !ok {
		t.Fatal("no scenario cold-pull")
	}
	sc.Scaled = true
	// One profile file per measured pull (name.1, name.2, ...: pprof
	// reads several at once), since a file holds one profile.
	profName := os.Getenv("SILT_BENCH_CPUPROFILE")
	ctx := context.Background()
	for _, be := range []string{bench.BackendFS, bench.BackendMem} {
		in, err := sc.Setup(ctx, bench.Env{Backend: be, Dir: t.TempDir()}, files)
		if err != nil {
			t.Fatal(err)
		}
		var cpu, wall time.Duration
		var reqs int
		for trial := range trials {
			if err := in.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			var prof *os.File
			if profName != "" && be == bench.BackendFS {
				if prof, err = os.Create(fmt.Sprintf("%s.%d", profName, trial+1)); err != nil {
					t.Fatal(err)
				}
				if err := pprof.StartCPUProfile(prof); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := in.Measure(ctx)
			if prof != nil {
				pprof.StopCPUProfile()
				if cerr := prof.Close(); cerr != nil {
					t.Fatal(cerr)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			cpu += tr.CPU
			wall += tr.Wall
			reqs = int(tr.Stats.Counts.Total())
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: cold pull of %d files: CPU %.0f ms per pull, %.1f µs per file; wall %.0f ms; %d requests",
			be, files, float64(cpu/trials)/1e6, float64(cpu/trials)/1e3/files, float64(wall/trials)/1e6, reqs)
	}
}
