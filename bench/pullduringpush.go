package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// PullDuringPushConfig sets up issue 12's first target: a scoped pull of
// one model while a push of another model is uploading.
type PullDuringPushConfig struct {
	PushFiles int           // files the other model's push uploads
	Latency   time.Duration // added to every request
	Service   bool          // through silt serve instead of the library
	Dir       string        // scratch directory (short: it holds the socket)
}

// PullDuringPushResult compares the scoped pull alone with the same pull
// started while the push uploads; the target is Ratio <= 1.5.
type PullDuringPushResult struct {
	Via      string  `json:"via"`
	PushMs   float64 `json:"push_ms"`
	AloneMs  float64 `json:"alone_ms"`
	DuringMs float64 `json:"during_ms"`
	Ratio    float64 `json:"ratio"`
}

// PullDuringPush measures it on the in-memory store.
func PullDuringPush(ctx context.Context, cfg PullDuringPushConfig) (PullDuringPushResult, error) {
	res := PullDuringPushResult{Via: "library"}
	if cfg.Service {
		res.Via = "service"
	}
	raw := mem.New()
	// Seed model m3 (what the pull brings in) straight into the bucket.
	seed, err := syncer.Open(ctx, syncer.Config{Backend: raw, Dir: filepath.Join(cfg.Dir, "seed")})
	if err != nil {
		return res, err
	}
	for i := range 5 {
		if err := writeFile(filepath.Join(cfg.Dir, "seed", "data/t/m3", fmt.Sprint(i)), "m3"); err != nil {
			return res, err
		}
	}
	if _, err := seed.Push(ctx, syncer.PushOptions{All: true}); err != nil {
		return res, err
	}
	seed.Close()

	store := wrap.Latency(raw, wrap.LatencyConfig{Delay: cfg.Latency})
	cache := filepath.Join(cfg.Dir, "c")
	started := make(chan struct{})
	var once sync.Once
	progress := func(p syncer.Progress) {
		if p.Op == "push" {
			once.Do(func() { close(started) })
		}
	}
	var pull func(ctx context.Context) error
	var push func(ctx context.Context) (syncer.Stats, error)
	var done func() error
	if cfg.Service {
		srv, err := serve.Open(ctx, serve.Config{Syncer: syncer.Config{Backend: store, Dir: cache}})
		if err != nil {
			return res, err
		}
		ln, err := serve.Listen(ctx, cache)
		if err != nil {
			return res, errors.Join(err, srv.Shutdown(ctx))
		}
		go srv.Serve(ln)
		c, err := serve.Dial(ctx, cache)
		if err != nil {
			return res, errors.Join(err, srv.Shutdown(ctx))
		}
		pull = func(ctx context.Context) error {
			_, err := c.Pull(ctx, serve.PullRequest{Scope: []string{"data/t/m3"}})
			return err
		}
		push = func(ctx context.Context) (syncer.Stats, error) {
			j, err := c.Start(ctx, "/v1/push", serve.PushRequest{Paths: []string{"data/t/m2"}})
			if err != nil {
				return syncer.Stats{}, err
			}
			// The job's progress says when uploads are under way.
			for {
				jj, err := c.Job(ctx, j.ID)
				if err != nil {
					return syncer.Stats{}, err
				}
				if jj.Progress.Files > 0 || jj.State != serve.JobRunning {
					once.Do(func() { close(started) })
				}
				if jj.State != serve.JobRunning {
					if jj.Error != nil {
						return syncer.Stats{}, jj.Error
					}
					return syncer.Stats{}, nil
				}
				time.Sleep(time.Millisecond) // polling interval of a client, not synchronisation
			}
		}
		done = func() error { return srv.Shutdown(context.WithoutCancel(ctx)) }
	} else {
		s, err := syncer.Open(ctx, syncer.Config{Backend: store, Dir: cache, Progress: progress})
		if err != nil {
			return res, err
		}
		pull = func(ctx context.Context) error {
			_, err := s.Pull(ctx, syncer.PullOptions{Scope: []string{"data/t/m3"}})
			return err
		}
		push = func(ctx context.Context) (syncer.Stats, error) {
			if err := s.MarkDirty("data/t/m2"); err != nil {
				return syncer.Stats{}, err
			}
			return s.Push(ctx, syncer.PushOptions{})
		}
		done = s.Close
	}
	defer done()

	// A first pull reads the index; then the pulled copies are removed
	// (unmarked, so not a deletion) before each measured pull, which
	// downloads them again: the same work alone and during the push.
	if err := pull(ctx); err != nil {
		return res, err
	}
	if err := os.RemoveAll(filepath.Join(cache, "data/t/m3")); err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := pull(ctx); err != nil {
		return res, err
	}
	res.AloneMs = ms(time.Since(t0))
	if err := os.RemoveAll(filepath.Join(cache, "data/t/m3")); err != nil {
		return res, err
	}
	for i := range cfg.PushFiles {
		if err := writeFile(filepath.Join(cache, "data/t/m2", fmt.Sprint(i)), fmt.Sprint("m2-", i)); err != nil {
			return res, err
		}
	}
	pushed := make(chan error, 1)
	p0 := time.Now()
	go func() {
		_, err := push(ctx)
		res.PushMs = ms(time.Since(p0))
		pushed <- err
	}()
	<-started
	t1 := time.Now()
	perr := pull(ctx)
	res.DuringMs = ms(time.Since(t1))
	if err := errors.Join(perr, <-pushed); err != nil {
		return res, err
	}
	if res.AloneMs > 0 {
		res.Ratio = round3(res.DuringMs / res.AloneMs)
	}
	return res, nil
}

func writeFile(p, body string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(body), 0o644)
}
