// Package verify is silt's health check of a store: does it answer, keep
// create-if-absent and compare-and-swap (also under contention), and hold
// a readable index whose shards match their hashes. `silt verify` prints
// its [Result].
//
// It uses only [probe] (the conditional-write checks) and [index] (the
// snapshot), so a host runs it without a cache directory or a Syncer.
package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/probe"
	"github.com/siltsync/silt/index"
)

// Result is a store's health report.
type Result struct {
	Healthy   bool              `json:"healthy"`
	Message   string            `json:"message"`
	LatencyMs float64           `json:"latency_ms"`
	Type      string            `json:"type"`
	Details   map[string]string `json:"details,omitempty"`
	// Probe is what the sequential probe of conditional writes observed.
	Probe probe.Report `json:"probe"`
	// Race is what Racers concurrent compare-and-swap writers
	// observed (zero when the store claims no compare-and-swap).
	Race probe.RaceReport `json:"race"`
	// CreateRace is what Racers writers racing to create one key
	// observed, as writers race for a log bucket's next entry (zero
	// when the store claims no create-if-absent).
	CreateRace probe.CreateRaceReport `json:"create_race"`
	// Seq, Shards and Entries describe the current index, every shard of
	// which was read and checked against its hash.
	Seq     uint64 `json:"seq"`
	Shards  int    `json:"shards"`
	Entries int    `json:"entries"`
	// Problems lists every deviation found, in plain words.
	Problems []string `json:"problems"`
}

// Racers, Increments and CreateRounds size Run's races:
// the conformance suite's race, bounded to a few seconds on a remote store.
const (
	Racers     = 16
	Increments = 3
	// CreateRounds is how many fresh keys Run's create-if-absent race
	// contends for.
	CreateRounds = 3
)

// Run checks, on scratch keys it removes, that the store answers, that
// it honours create-if-absent and compare-and-swap (a sequential probe,
// then Racers writers racing on one key: a store whose If-Match is
// not atomic loses updates only under contention), and that every shard
// of the namespace root b's current index is readable and matches its
// hash. A store that silently ignores conditions is caught at setup, not
// by lost updates. An error is returned only when the index cannot be
// read at all; store deviations go in Problems.
func Run(ctx context.Context, b backend.Backend) (Result, error) {
	start := time.Now()
	res := Result{Type: fmt.Sprintf("%T", backend.Base(b)), Details: map[string]string{}, Problems: []string{}}
	caps := b.Capabilities()
	res.Details["conditional_put"] = fmt.Sprint(caps.ConditionalPut)
	res.Details["conditional_delete"] = fmt.Sprint(caps.ConditionalDelete)
	snap, err := index.OpenSnapshot(ctx, b)
	if err != nil {
		return res, fmt.Errorf("read the index: %w", err)
	}
	m := snap.Manifest()
	res.Seq, res.Shards = m.Seq, len(m.Shards)
	if err := snap.Walk(ctx, "", func(string, index.Entry) error { res.Entries++; return nil }); err != nil {
		return res, fmt.Errorf("read the index shards: %w", err)
	}
	scratch := fmt.Sprintf("%sverify/%d", index.ControlPrefix, time.Now().UnixNano())
	res.Probe, err = probe.Conditional(ctx, b, scratch)
	res.LatencyMs = ms(time.Since(start))
	if err != nil {
		res.Message = "store unreachable or refusing writes: " + err.Error()
		res.Problems = append(res.Problems, res.Message)
		return res, nil
	}
	res.Problems = append(res.Problems, res.Probe.Problems...)
	if (caps.ConditionalPut || caps.AtomicCreate) && res.Probe.IfNoneMatch {
		// The default format's commit point, on every store.
		res.CreateRace, err = probe.CreateRace(ctx, b, scratch+".create", Racers, CreateRounds)
		switch {
		case err != nil:
			res.Problems = append(res.Problems, "create-if-absent race: "+err.Error())
		case !res.CreateRace.OK():
			res.Problems = append(res.Problems, fmt.Sprintf("create-if-absent is not atomic: %d writers racing for one key, %d creates acknowledged over %d rounds (%d kept other bytes)",
				res.CreateRace.Writers, res.CreateRace.Won, res.CreateRace.Rounds, res.CreateRace.Wrong))
		}
	}
	switch {
	case !caps.ConditionalPut && !caps.AtomicCreate:
		res.Problems = append(res.Problems, "claims neither create-if-absent nor compare-and-swap")
	case res.Probe.IfMatch:
		res.Race, err = probe.Race(ctx, b, scratch+".race", Racers, Increments)
		switch {
		case err != nil:
			res.Problems = append(res.Problems, "compare-and-swap race: "+err.Error())
		case !res.Race.OK():
			res.Problems = append(res.Problems, fmt.Sprintf("lost %d of %d compare-and-swap updates with %d concurrent writers: its If-Match is not atomic",
				res.Race.Want-res.Race.Got, res.Race.Want, res.Race.Writers))
		}
	}
	res.LatencyMs = ms(time.Since(start))
	if len(res.Problems) > 0 {
		res.Message = "store does not keep silt's contract: " + strings.Join(res.Problems, "; ")
		return res, nil
	}
	res.Healthy = true
	res.Message = "ok: reachable, index readable, create-if-absent and compare-and-swap honoured under contention"
	if !caps.ConditionalPut {
		res.Message = "ok: reachable, index readable, create-if-absent honoured under contention; no compare-and-swap, which the default format does not need (a bucket in format 3 commits only under a commit lock)"
	}
	return res, nil
}

// ms is a duration in milliseconds, to the microsecond, as the JSON reports it.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
