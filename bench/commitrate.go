package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// CommitRateConfig sizes a commit-rate run: Writers caches, each on its
// own directory and Syncer (as separate processes are: no group commit
// between them), each pushing Pushes new versions of its own model's one
// file, all at once, to one bucket.
type CommitRateConfig struct {
	// Store is the bucket as the writers see it, with whatever limit it
	// emulates under its production layers (backend.Production).
	Store backend.Backend
	// Writers is the number of writers (8 in issue 23's table).
	Writers int
	// Pushes is each writer's number of pushes.
	Pushes int
	// Dir is the scratch directory the caches are made in.
	Dir string
}

// CommitRateResult is what a run measured.
type CommitRateResult struct {
	Writers int `json:"writers"`
	// Pushes and Failed count the pushes sent and those that returned an
	// error (commit contention after the engine's retries, say).
	Pushes int `json:"pushes"`
	Failed int `json:"failed"`
	// Commits is the number of distinct manifest sequences the successful
	// pushes wrote; Seconds the wall time of the run.
	Commits int     `json:"commits"`
	Seconds float64 `json:"seconds"`
	// PerSecond is Commits / Seconds.
	PerSecond float64 `json:"perSecond"`
	// FirstError is the first failed push's error, if any.
	FirstError string `json:"firstError,omitempty"`
	// Lost counts writers whose last acknowledged version is not, or is
	// older than, what the bucket's final index holds for their file: a
	// lost update. It must be 0.
	Lost int `json:"lost"`
}

// CommitRate runs cfg and checks, against the bucket's final index, that
// no acknowledged commit was lost.
func CommitRate(ctx context.Context, cfg CommitRateConfig) (CommitRateResult, error) {
	res := CommitRateResult{Writers: cfg.Writers}
	type writer struct {
		s     *syncer.Syncer
		dir   string
		acked int            // last version whose push returned nil
		sums  map[string]int // sha256 of each version written -> version
		seqs  []uint64
		fails int
		first error
	}
	ws := make([]*writer, cfg.Writers)
	for i := range ws {
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("w%d", i))
		s, err := syncer.Open(ctx, syncer.Config{Backend: cfg.Store, Dir: dir})
		if err != nil {
			return res, err
		}
		defer s.Close()
		ws[i] = &writer{s: s, dir: dir, sums: map[string]int{}}
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for i, w := range ws {
		g.Go(func() error {
			p := fmt.Sprintf("m%d/f", i)
			for n := 1; n <= cfg.Pushes; n++ {
				data := fmt.Appendf(nil, "writer %d version %d\n", i, n)
				sum := sha256.Sum256(data)
				w.sums[hex.EncodeToString(sum[:])] = n
				if err := os.MkdirAll(filepath.Join(w.dir, fmt.Sprintf("m%d", i)), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(w.dir, filepath.FromSlash(p)), data, 0o644); err != nil {
					return err
				}
				if err := w.s.MarkDirty(p); err != nil {
					return err
				}
				st, err := w.s.Push(gctx, syncer.PushOptions{Paths: []string{fmt.Sprintf("m%d", i)}})
				switch {
				case gctx.Err() != nil:
					return gctx.Err()
				case err != nil || st.Files.Conflicts > 0:
					w.fails++
					if w.first == nil {
						w.first = err
						if err == nil {
							w.first = fmt.Errorf("conflicts: %v", st.Conflicts)
						}
					}
				default:
					w.acked = n
					w.seqs = append(w.seqs, st.Seq)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	seqs := map[uint64]bool{}
	for _, w := range ws {
		res.Pushes += cfg.Pushes
		res.Failed += w.fails
		if w.first != nil && res.FirstError == "" {
			res.FirstError = w.first.Error()
		}
		for _, q := range w.seqs {
			seqs[q] = true
		}
	}
	res.Commits = len(seqs)
	if res.Seconds > 0 {
		res.PerSecond = float64(res.Commits) / res.Seconds
	}
	snap, err := index.OpenSnapshot(ctx, cfg.Store)
	if err != nil {
		return res, err
	}
	for i, w := range ws {
		e, ok, err := snap.Lookup(ctx, fmt.Sprintf("m%d/f", i))
		if err != nil {
			return res, err
		}
		// A failed push may still have committed (an outcome the store
		// did not report), so a newer version than the acknowledged one
		// is no loss; an older one, or none, is.
		if got := w.sums[e.SHA256]; w.acked > 0 && (!ok || got < w.acked) {
			res.Lost++
		}
	}
	if res.Lost > 0 {
		return res, errors.New("bench: an acknowledged commit is missing from the final index")
	}
	return res, nil
}
