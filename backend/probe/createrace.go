package probe

import (
	"bytes"
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

// CreateRaceReport is what CreateRace observed.
type CreateRaceReport struct {
	Writers int `json:"writers"`
	Rounds  int `json:"rounds"`
	// Won counts the creates the store acknowledged: one per round on a
	// store whose create-if-absent is atomic.
	Won int `json:"won"`
	// Wrong counts rounds whose stored bytes are not the one winner's.
	Wrong int `json:"wrong"`
}

// OK reports whether every round had exactly one winner, whose bytes the
// store kept.
func (r CreateRaceReport) OK() bool { return r.Won == r.Rounds && r.Wrong == 0 }

// CreateRace has writers goroutines race, rounds times, to create one
// fresh key under scratchPrefix with Put(IfAbsent), each with its own
// bytes, as the writers of a log bucket race to create its next entry. A
// store whose create-if-absent is atomic acknowledges exactly one writer
// per round and keeps that writer's bytes; one that checks for the key
// before writing (a race inside the store) acknowledges several. The keys
// are deleted before CreateRace returns. The error is for failures that
// stopped the race (network, permissions).
func CreateRace(ctx context.Context, b backend.Backend, scratchPrefix string, writers, rounds int) (CreateRaceReport, error) {
	rep := CreateRaceReport{Writers: writers, Rounds: rounds}
	for r := range rounds {
		key := fmt.Sprintf("%s/%d", scratchPrefix, r)
		won := make([]bool, writers)
		g, gctx := errgroup.WithContext(ctx)
		for w := range writers {
			g.Go(func() error {
				_, err := backend.PutBytes(gctx, b, key, createBytes(r, w), backend.Cond{IfAbsent: true})
				switch {
				case err == nil:
					won[w] = true
				case !backend.IsPrecondition(err):
					return fmt.Errorf("probe: create race on %q: %w", key, err)
				}
				return nil
			})
		}
		err := g.Wait()
		defer b.Delete(context.WithoutCancel(ctx), key, backend.Cond{}) //nolint:errcheck // best effort on a scratch key
		if err != nil {
			return rep, err
		}
		got, _, err := backend.ReadAll(ctx, b, key, backend.GetOptions{}, 0)
		if err != nil {
			return rep, fmt.Errorf("probe: read the create race's %q: %w", key, err)
		}
		winners := 0
		for w, ok := range won {
			if ok {
				winners++
				if !bytes.Equal(got, createBytes(r, w)) {
					rep.Wrong++
				}
			}
		}
		rep.Won += winners
	}
	return rep, nil
}

func createBytes(round, writer int) []byte {
	return fmt.Appendf(nil, "silt create race, round %d, writer %d", round, writer)
}
