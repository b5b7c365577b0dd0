package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siltsync/silt/backend"
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
	// UploadDelay, when set, replaces Latency for every Put, conditional
	// or not (the push's uploads and commit; the pull sends none), to make
	// the push last as a push over a slow link does.
	UploadDelay time.Duration
	// Trials is how many pulls are timed alone and during the push
	// (medians are reported); 0 means 5.
	Trials int
	// Store is the bucket, empty and used by nobody else; nil means a new
	// in-memory store. StoreName labels it.
	Store     backend.Backend
	StoreName string
	Service   bool   // through silt serve instead of the library
	Dir       string // scratch directory (short: it holds the socket)
}

// PullDuringPushResult compares the scoped pull alone with the same pull
// run while the push uploads; the target is Ratio <= 1.5.
type PullDuringPushResult struct {
	Via      string  `json:"via"`
	Store    string  `json:"store"`
	Trials   int     `json:"trials"`
	PushMs   float64 `json:"push_ms"`
	AloneMs  float64 `json:"alone_median_ms"`
	DuringMs float64 `json:"during_median_ms"`
	Ratio    float64 `json:"ratio"`
	// Overlapped counts the timed pulls that ended before the push did
	// (all of them, or the push was too short to measure against).
	Overlapped int `json:"overlapped"`
}

// pullModel is the model the measured pull brings in; pushModel the one
// the concurrent push uploads.
const (
	pullModel = "data/t/m3"
	pushModel = "data/t/m2"
)

// PullDuringPush measures it.
func PullDuringPush(ctx context.Context, cfg PullDuringPushConfig) (PullDuringPushResult, error) {
	if cfg.Trials <= 0 {
		cfg.Trials = 5
	}
	res := PullDuringPushResult{Via: "library", Store: cfg.StoreName, Trials: cfg.Trials}
	if cfg.Service {
		res.Via = "service"
	}
	raw := cfg.Store
	if raw == nil {
		raw = mem.New()
		if res.Store == "" {
			res.Store = BackendMem
		}
	}
	// Seed the pulled model straight into the bucket.
	seed, err := syncer.Open(ctx, syncer.Config{Backend: raw, Dir: filepath.Join(cfg.Dir, "seed")})
	if err != nil {
		return res, err
	}
	for i := range 5 {
		if err := writeFile(filepath.Join(cfg.Dir, "seed", pullModel, fmt.Sprint(i)), "m3"); err != nil {
			return res, errors.Join(err, seed.Close())
		}
	}
	_, err = seed.Push(ctx, syncer.PushOptions{All: true})
	if err = errors.Join(err, seed.Close()); err != nil {
		return res, err
	}

	lc := wrap.LatencyConfig{Delay: cfg.Latency}
	if cfg.UploadDelay > 0 {
		lc.PerVerb = map[wrap.Verb]time.Duration{wrap.VerbPut: cfg.UploadDelay, wrap.VerbCondPut: cfg.UploadDelay}
	}
	store := wrap.Latency(raw, lc)
	cache := filepath.Join(cfg.Dir, "c")
	started := make(chan struct{}) // closed once the push transferred a file, or ended
	var once sync.Once
	uploading := func() { once.Do(func() { close(started) }) }
	var pull func(ctx context.Context) error
	var push func(ctx context.Context) error
	var done func() error
	if cfg.Service {
		sv, err := startService(ctx, syncer.Config{Backend: store, Dir: cache})
		if err != nil {
			return res, err
		}
		pull = func(ctx context.Context) error {
			_, err := sv.c.Pull(ctx, syncer.PullOptions{Scope: []string{pullModel}})
			return err
		}
		push = func(ctx context.Context) error {
			j, err := sv.c.Start(ctx, "/v1/push", serve.PushRequest{PushOptions: syncer.PushOptions{Paths: []string{pushModel}}})
			if err != nil {
				return err
			}
			// The job's progress says when uploads are under way.
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				jj, err := sv.c.Job(ctx, j.ID)
				if err != nil {
					return err
				}
				if jj.Progress.Files > 0 {
					uploading()
				}
				if jj.State != serve.JobRunning {
					if jj.Error != nil {
						return jj.Error
					}
					return nil
				}
				<-tick.C
			}
		}
		done = func() error { return sv.close(context.WithoutCancel(ctx)) }
	} else {
		progress := func(p syncer.Progress) {
			if p.Op == "push" && p.Done > 0 {
				uploading()
			}
		}
		s, err := syncer.Open(ctx, syncer.Config{Backend: store, Dir: cache, Progress: progress})
		if err != nil {
			return res, err
		}
		pull = func(ctx context.Context) error {
			_, err := s.Pull(ctx, syncer.PullOptions{Scope: []string{pullModel}})
			return err
		}
		push = func(ctx context.Context) error {
			_, err := s.Push(ctx, syncer.PushOptions{Paths: []string{pushModel}})
			return err
		}
		done = s.Close
	}
	defer done()

	// The pulled copies are removed (unmarked, so not a deletion) before
	// each timed pull, which downloads them again: the same work alone and
	// during the push. A first pull reads the index.
	timed := func() (float64, error) {
		if err := os.RemoveAll(filepath.Join(cache, pullModel)); err != nil {
			return 0, err
		}
		t0 := time.Now()
		err := pull(ctx)
		return ms(time.Since(t0)), err
	}
	if err := pull(ctx); err != nil {
		return res, err
	}
	var alone, during []float64
	for range cfg.Trials {
		d, err := timed()
		if err != nil {
			return res, err
		}
		alone = append(alone, d)
	}
	for i := range cfg.PushFiles {
		if err := writeFile(filepath.Join(cache, pushModel, fmt.Sprint(i)), fmt.Sprint("m2-", i)); err != nil {
			return res, err
		}
	}
	var pushing sync.WaitGroup
	var pushErr error
	var pushEnd atomic.Int64
	p0 := time.Now()
	pushing.Go(func() {
		pushErr = push(ctx)
		pushEnd.Store(time.Now().UnixNano())
		res.PushMs = ms(time.Since(p0))
		uploading()
	})
	<-started
	var pullErr error
	for range cfg.Trials {
		d, err := timed()
		if err != nil {
			pullErr = err
			break
		}
		during = append(during, d)
		if pushEnd.Load() == 0 {
			res.Overlapped++
		}
	}
	pushing.Wait()
	if err := errors.Join(pullErr, pushErr); err != nil {
		return res, err
	}
	res.AloneMs, res.DuringMs = pct(alone, 50), pct(during, 50)
	if res.AloneMs > 0 {
		res.Ratio = round3(res.DuringMs / res.AloneMs)
	}
	return res, nil
}
