package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/fs"
	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
)

// envCommitRate runs issue 23's commit-rate table (8 writers; the pushes
// per writer from envCommitRatePushes, 10 by default) and logs it.
const (
	envCommitRate       = "SILT_BENCH_COMMITRATE"
	envCommitRatePushes = "SILT_BENCH_COMMITRATE_PUSHES"
)

// TestCommitRate_BeatsTheOneObjectCap: writers racing on a store that
// lets one object change once per 100 ms lose no acknowledged commit, and
// beat that one-object cap, since each commit creates its own log entry
// (the hint is rewritten only by checkpoints).
func TestCommitRate_BeatsTheOneObjectCap(t *testing.T) {
	const per = 100 * time.Millisecond // capped, 20 commits would take 2 s
	store := backend.Production(wrap.MutationRate(mem.New(), wrap.RateConfig{Per: per}))
	res, err := CommitRate(t.Context(), CommitRateConfig{Store: store, Writers: 4, Pushes: 5, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("%+v: %v", res, err)
	}
	t.Logf("%+v", res)
	if res.Lost != 0 || res.Failed != 0 || res.Commits != 20 {
		t.Fatalf("lost %d, failed %d, commits %d: want 0, 0 and 20", res.Lost, res.Failed, res.Commits)
	}
	if limit := int(res.Seconds/per.Seconds()) + 1; res.Commits <= limit {
		t.Fatalf("%d commits in %.2fs did not beat the one-object cap of %d", res.Commits, res.Seconds, limit)
	}
}

// TestCommitRate_Table measures commits per second of 8 writers on fs,
// on fs behind GCS's documented limit of about one mutation per second
// per object, and on versitygw when SILT_BENCH_S3_URL is set.
func TestCommitRate_Table(t *testing.T) {
	if os.Getenv(envCommitRate) == "" {
		t.Skip("set " + envCommitRate + "=1 to measure (minutes)")
	}
	pushes := 10
	if v := os.Getenv(envCommitRatePushes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", envCommitRatePushes, v)
		}
		pushes = n
	}
	type row struct {
		name string
		open func(t *testing.T) backend.Backend
	}
	fsStore := func(t *testing.T) backend.Backend {
		b, err := fs.New(filepath.Join(t.TempDir(), "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	rows := []row{
		{"fs", func(t *testing.T) backend.Backend { return backend.Production(fsStore(t)) }},
		{"fs, 1 mutation/s per object (GCS)", func(t *testing.T) backend.Backend {
			return backend.Production(wrap.MutationRate(fsStore(t), wrap.RateConfig{Per: time.Second}))
		}},
	}
	if os.Getenv(envS3) != "" {
		rows = append(rows, row{"versitygw", func(t *testing.T) backend.Backend { return openStore(t, "versitygw") }})
	}
	out := "| store | writers | pushes | failed | commits | seconds | commits/s | lost |\n|---|---|---|---|---|---|---|---|\n"
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			res, err := CommitRate(t.Context(), CommitRateConfig{Store: r.open(t), Writers: 8, Pushes: pushes, Dir: t.TempDir()})
			if err != nil {
				t.Fatalf("%+v: %v", res, err)
			}
			if res.FirstError != "" {
				t.Logf("first failed push: %s", res.FirstError)
			}
			out += fmt.Sprintf("| %s | %d | %d | %d | %d | %.1f | %.2f | %d |\n", r.name, res.Writers, res.Pushes, res.Failed, res.Commits, res.Seconds, res.PerSecond, res.Lost)
		})
	}
	t.Log("\n" + out)
}
