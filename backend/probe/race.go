package probe

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

// RaceReport is what Race observed.
type RaceReport struct {
	Writers    int `json:"writers"`
	Increments int `json:"increments"` // per writer
	Want       int `json:"want"`       // Writers * Increments
	Got        int `json:"got"`        // the counter's final value
	Lost       int `json:"lost"`       // lost races the writers retried
}

// OK reports whether no increment was lost.
func (r RaceReport) OK() bool { return r.Got == r.Want }

// Race has writers goroutines each add increments to a counter at
// scratchKey through Get and Put(IfMatch), re-reading after every lost
// race, as the manifest commit does. A store whose If-Match is atomic ends
// at writers*increments; one that only checks the version before writing
// (a read-then-write race inside the store) loses updates under contention,
// which a sequential probe cannot see. The key must not exist; it is
// deleted before Race returns. The error is for failures that stopped the
// race (network, permissions, more than a bounded number of retries).
func Race(ctx context.Context, b backend.Backend, scratchKey string, writers, increments int) (RaceReport, error) {
	rep := RaceReport{Writers: writers, Increments: increments, Want: writers * increments}
	if _, err := backend.PutBytes(ctx, b, scratchKey, []byte("0"), backend.Cond{IfAbsent: true}); err != nil {
		return rep, fmt.Errorf("probe: create race counter %q: %w", scratchKey, err)
	}
	defer b.Delete(context.WithoutCancel(ctx), scratchKey, backend.Cond{}) //nolint:errcheck // best effort on a scratch key
	lost := make([]int, writers)
	g, gctx := errgroup.WithContext(ctx)
	for w := range writers {
		g.Go(func() error {
			for range increments {
				for attempt := 0; ; attempt++ {
					if attempt > 50*writers {
						return errors.New("probe: a writer lost the compare-and-swap race too often")
					}
					data, info, err := backend.ReadAll(gctx, b, scratchKey, backend.GetOptions{}, 64)
					if err != nil {
						return fmt.Errorf("probe: read race counter: %w", err)
					}
					n, err := strconv.Atoi(string(data))
					if err != nil {
						return fmt.Errorf("probe: race counter holds %q", data)
					}
					_, err = backend.PutBytes(gctx, b, scratchKey, []byte(strconv.Itoa(n+1)), backend.Cond{IfMatch: info.Version})
					if err == nil {
						break
					}
					if !backend.IsPrecondition(err) && !backend.IsRetryable(err) {
						return fmt.Errorf("probe: write race counter: %w", err)
					}
					lost[w]++ // lost the race (or S3's 409 under contention): re-read
				}
			}
			return nil
		})
	}
	err := g.Wait()
	for _, l := range lost {
		rep.Lost += l
	}
	if err != nil {
		return rep, err
	}
	data, _, err := backend.ReadAll(ctx, b, scratchKey, backend.GetOptions{}, 64)
	if err != nil {
		return rep, fmt.Errorf("probe: read race counter: %w", err)
	}
	rep.Got, err = strconv.Atoi(string(data))
	if err != nil {
		return rep, fmt.Errorf("probe: race counter holds %q", data)
	}
	return rep, nil
}
