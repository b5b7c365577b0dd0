package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/watch"
)

// watchFlags are sync's --watch and the intervals that tune it.
type watchFlags struct {
	on       *bool
	poll     *time.Duration
	debounce *time.Duration
	walk     *time.Duration
}

func watchFlagsOf(fs *flag.FlagSet) watchFlags {
	return watchFlags{
		on:       fs.Bool("watch", false, "keep syncing until Ctrl-C: push local changes as file-system events report them, pull remote ones every --poll"),
		poll:     fs.Duration("poll", watch.DefaultPoll, "with --watch: how often to read the remote (one request when nothing moved; negative: never)"),
		debounce: fs.Duration("debounce", watch.DefaultDebounce, "with --watch: push once the cache has been quiet this long, so a burst of writes is one commit"),
		walk:     fs.Duration("walk", watch.DefaultWalk, "with --watch: how often to walk the whole cache in case events were lost (no request when nothing changed; negative: never)"),
	}
}

// usage refuses the tuning flags without --watch, where they would do
// nothing.
func (w watchFlags) usage(fs *flag.FlagSet) error {
	if *w.on {
		if *w.debounce <= 0 {
			return usagef("--debounce must be positive")
		}
		return nil
	}
	for _, name := range []string{"poll", "debounce", "walk"} {
		if fs.Changed(name) {
			return usagef("--%s needs --watch", name)
		}
	}
	return nil
}

// runWatch runs sync --watch on bd until ctx ends: a clean stop (Ctrl-C)
// returns nil, so the process exits 0. Each step that changed something is
// printed as sync prints it, a JSON line each with --json.
func (c *cli) runWatch(ctx context.Context, bd *bound, w watchFlags, opts watch.Options) error {
	opts.Poll, opts.Debounce, opts.Walk = *w.poll, *w.debounce, *w.walk
	opts.OnEvent = func(e watch.Event) { c.printWatch(bd, opts, e) }
	// A clean stop is a success, not an interruption: the loop finished
	// or cancelled its step through the engine, which is crash-safe.
	err := watch.Run(ctx, bd.s, opts)
	if se := (*watch.StepError)(nil); errors.As(err, &se) {
		return fmt.Errorf("sync --watch %s: %w", bd.dir, err)
	}
	return err
}

// printWatch prints one event of a watch.
func (c *cli) printWatch(bd *bound, opts watch.Options, e watch.Event) {
	if c.json {
		if e.Kind == watch.KindPull && !e.Changed() && !c.verbose {
			return // an idle poll a second is noise
		}
		data, err := json.Marshal(e)
		if err == nil {
			c.meter.clear()
			fmt.Fprintf(c.stdout, "%s\n", data)
		}
		return
	}
	switch e.Kind {
	case watch.KindStarted:
		how := fmt.Sprintf("file-system events on %s", countOf(e.Dirs, "directory", "directories"))
		if !e.Notify {
			how = "walks only (no file-system events)"
		}
		fmt.Fprintf(c.stderr, "watching %s: %s, remote poll %v, debounce %v; Ctrl-C stops\n", bd.dir, how, pollText(opts.Poll), opts.Debounce)
	case watch.KindPull, watch.KindPush:
		if !e.Changed() && !c.verbose {
			return
		}
		c.printStats(*e.Stats)
		if e.Stats.Files.Conflicts <= e.Reported {
			return
		}
		if err := c.conflicted(*e.Stats, bd.dir); err != nil {
			var re *refusedError
			if errors.As(err, &re) {
				fmt.Fprintf(c.stderr, "silt sync --watch: %s\nhint: %s\n", re.msg, re.hint)
			}
		}
	case watch.KindError:
		c.meter.clear()
		if e.Retry > 0 {
			fmt.Fprintf(c.stderr, "silt sync --watch: %s (failure %d; retrying in %v)\n", e.Error, e.Failures, e.Retry.Round(time.Millisecond))
		} else {
			fmt.Fprintf(c.stderr, "silt sync --watch: %s\n", e.Error)
		}
		if c.logger != nil {
			c.logger.Warn("watch step failed", "trigger", e.Trigger, "err", e.Error, "failures", e.Failures, "retry", e.Retry)
		}
	case watch.KindRecovered:
		fmt.Fprintf(c.stderr, "silt sync --watch: recovered after %s\n", count(e.Failures, "failed step"))
	case watch.KindStopped:
		if e.Err == nil {
			fmt.Fprintf(c.stderr, "stopped watching %s\n", bd.dir)
		}
	}
}

func pollText(d time.Duration) string {
	if d < 0 {
		return "off"
	}
	return d.String()
}
