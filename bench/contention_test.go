package bench

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
	_ "github.com/siltsync/silt/backend/s3" // s3:// for SILT_BENCH_S3_URL
)

// envContention runs the full size and logs the figures; envS3 is
// an s3:// URL of an existing bucket (versitygw, as bench/CONTENTION.md
// and .ci/run start it) that adds the S3 store, each run on a fresh
// prefix.
const (
	envContention = "SILT_BENCH_CONTENTION"
	envS3         = "SILT_BENCH_S3_URL"
)

// benchStores returns the stores to run on: mem and fs, plus versitygw
// (the bucket of envS3) when set.
func benchStores() []string {
	names := []string{BackendMem, BackendFS}
	if os.Getenv(envS3) != "" {
		names = append(names, "versitygw")
	}
	return names
}

// openStore returns a fresh, empty bucket (or prefix) of the named kind.
func openStore(t *testing.T, name string) backend.Backend {
	t.Helper()
	switch name {
	case BackendMem:
		return mem.New()
	case BackendFS:
		b, err := fs.New(filepath.Join(t.TempDir(), "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	b, err := backend.Open(t.Context(), os.Getenv(envS3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return backend.Prefixed(b, "contention-"+rand.Text()[:10])
}

// scratch is a short scratch directory: it holds a Unix socket.
func scratch(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// The benchmark's machinery, by counts rather than times: every step of
// every round runs and commits, through the library and the service, on
// mem and fs; group commit never makes more manifest commits than pushes,
// and every commit sent at least one compare-and-swap.
func TestContention_LibraryAndService(t *testing.T) {
	rounds, latencies := 1, []time.Duration{0} // counts, cheaply (it runs under -race in CI)
	full := os.Getenv(envContention) != ""
	if full {
		rounds, latencies = 5, []time.Duration{0, 10 * time.Millisecond}
	}
	for _, name := range benchStores() {
		for _, lat := range latencies {
			for _, svc := range []bool{false, true} {
				cfg := ContentionConfig{Models: 7, Rounds: rounds, Latency: lat, Service: svc, Dir: scratch(t),
					Store: openStore(t, name), StoreName: name}
				res, err := Contention(t.Context(), cfg)
				if err != nil {
					t.Fatalf("%s on %s: %v", res.Via, name, err)
				}
				if res.Steps != 7*rounds || res.Pushes != res.Steps || res.Commits < 1 || res.Commits > res.Pushes ||
					res.CASAttempts < int64(res.Commits) {
					t.Fatalf("%s on %s: counts off: %+v", res.Via, name, res)
				}
				t.Logf("%-7s %-9s %3.0f ms/req: overhead alone median %.1f ms; 7 concurrent median %.1f, p95 %.1f ms (p95 %.2fx alone); "+
					"phases alone lock/pull/mark/push %.1f/%.1f/%.1f/%.1f, concurrent %.1f/%.1f/%.1f/%.1f; CPU per step alone %.1f ms, concurrent %.1f ms; %d pushes in %d commits, %d CAS (%.2f per commit)",
					res.Via, name, res.LatencyMs, res.AloneMedian, res.ConcMedian, res.ConcP95, res.P95VsAlone,
					res.Alone.Lock, res.Alone.Pull, res.Alone.Mark, res.Alone.Push, res.Concurrent.Lock, res.Concurrent.Pull, res.Concurrent.Mark, res.Concurrent.Push,
					res.AloneCPUMs, res.ConcCPUMs, res.Pushes, res.Commits, res.CASAttempts, res.CASPerCommit)
			}
		}
	}
}

// The scoped pull of one model runs while a push of another uploads, and
// both succeed. A full run slows the push's uploads to last about 10 s.
func TestPullDuringPush_LibraryAndService(t *testing.T) {
	files, lat, upload, trials := 20, time.Millisecond, time.Duration(0), 2
	full := os.Getenv(envContention) != ""
	if full {
		files, lat, upload, trials = 800, 10*time.Millisecond, 200*time.Millisecond, 5
	}
	for _, name := range benchStores() {
		for _, svc := range []bool{false, true} {
			cfg := PullDuringPushConfig{PushFiles: files, Latency: lat, UploadDelay: upload, Trials: trials, Service: svc, Dir: scratch(t),
				Store: openStore(t, name), StoreName: name}
			res, err := PullDuringPush(t.Context(), cfg)
			if err != nil {
				t.Fatalf("%s on %s: %v", res.Via, name, err)
			}
			if res.AloneMs <= 0 || res.DuringMs <= 0 || res.PushMs <= 0 {
				t.Fatalf("%s on %s: %+v", res.Via, name, res)
			}
			t.Logf("%-7s %-9s push of %d files took %.0f ms; scoped pull alone %.1f ms, during the push %.1f ms (%.2fx; target <= 1.5x); %d of %d pulls overlapped",
				res.Via, name, files, res.PushMs, res.AloneMs, res.DuringMs, res.Ratio, res.Overlapped, res.Trials)
		}
	}
}
