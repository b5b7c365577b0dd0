package bench

import (
	"os"
	"testing"
	"time"
)

// The contention benchmark runs end to end, through the library and the
// service, and every step's push commits. SILT_BENCH_CONTENTION=1 runs the
// issue's full size (7 models, 10 rounds, 0 and 10 ms) and logs the figures.
func TestContention_LibraryAndService(t *testing.T) {
	rounds, latencies := 2, []time.Duration{0}
	if os.Getenv("SILT_BENCH_CONTENTION") != "" {
		rounds, latencies = 10, []time.Duration{0, 10 * time.Millisecond}
	}
	for _, lat := range latencies {
		for _, svc := range []bool{false, true} {
			dir, err := os.MkdirTemp("", "sb")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			res, err := Contention(t.Context(), ContentionConfig{Models: 7, Rounds: rounds, Latency: lat, Service: svc, Dir: dir})
			if err != nil {
				t.Fatalf("%s: %v", res.Via, err)
			}
			if res.Steps != 7*rounds || res.CASPerCommit < 1 {
				t.Fatalf("%s: %d steps, %.2f CAS per commit: %+v", res.Via, res.Steps, res.CASPerCommit, res)
			}
			t.Logf("%-7s %4.0f ms/request: step overhead alone median %.1f ms; 7 concurrent: median %.1f, p95 %.1f ms (p95 %.2fx alone); %.2f manifest CAS per commit",
				res.Via, res.LatencyMs, res.AloneMedian, res.ConcMedian, res.ConcP95, res.P95VsAlone, res.CASPerCommit)
		}
	}
}

// The scoped pull of one model runs while a push of another uploads, and
// both succeed. SILT_BENCH_CONTENTION=1 logs the figures at 10 ms per
// request.
func TestPullDuringPush_LibraryAndService(t *testing.T) {
	files, lat := 40, time.Millisecond
	if os.Getenv("SILT_BENCH_CONTENTION") != "" {
		files, lat = 800, 10*time.Millisecond
	}
	for _, svc := range []bool{false, true} {
		dir, err := os.MkdirTemp("", "sb")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		res, err := PullDuringPush(t.Context(), PullDuringPushConfig{PushFiles: files, Latency: lat, Service: svc, Dir: dir})
		if err != nil {
			t.Fatalf("%s: %v", res.Via, err)
		}
		if res.AloneMs <= 0 || res.DuringMs <= 0 || res.PushMs <= 0 {
			t.Fatalf("%s: %+v", res.Via, res)
		}
		t.Logf("%-7s push of %d files took %.0f ms; scoped pull alone %.1f ms, during the push %.1f ms (%.2fx; target <= 1.5x)",
			res.Via, files, res.PushMs, res.AloneMs, res.DuringMs, res.Ratio)
	}
}
