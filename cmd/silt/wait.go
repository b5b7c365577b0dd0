package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/internal/backoff"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// Bounds of the backoff between tries of a cache another process holds:
// quick at first, since most holders are short commands, and never so
// slow that a released cache sits idle for long.
const (
	busyPollFirst = 50 * time.Millisecond
	busyPollMax   = time.Second
)

// waitFlag declares the global --wait.
func waitFlag(fs *flag.FlagSet, c *cli) {
	fs.DurationVar(&c.wait, "wait", 0,
		"when another silt process holds the cache (without serving it), wait up to this long for it to let go (0: fail at once, naming it)")
}

// openWaiting opens the cache through open, which tries once, and while
// another process holds it retries with a bounded backoff until --wait
// runs out; then it fails with the last *syncer.BusyError. Each try dials
// the cache's service again, so a holder that starts serving is used.
func (c *cli) openWaiting(ctx context.Context, dir string, open func(wait time.Duration) (serve.Cache, error)) (serve.Cache, error) {
	if c.wait <= 0 {
		return open(0) // the engine's brief grace, as before --wait
	}
	deadline := time.Now().Add(c.wait)
	pause := busyPollFirst
	for announced := false; ; {
		s, err := open(-1)
		if !errors.Is(err, syncer.ErrBusy) {
			return s, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		if !announced {
			announced = true
			// Always said, on stderr: a command that seems to hang says why.
			fmt.Fprintf(c.stderr, "silt: %s: %v; waiting up to %v\n", dir, holderOf(err), c.wait)
		}
		if backoff.Sleep(ctx, min(pause, left)) != nil {
			return nil, context.Cause(ctx)
		}
		pause = min(2*pause, busyPollMax)
	}
}

// holderOf is the part of a busy error that names the holder.
func holderOf(err error) error {
	var be *syncer.BusyError
	if errors.As(err, &be) {
		return be
	}
	return err
}
