package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/syncer"
)

var resolveCmd = &command{
	name:    "resolve",
	args:    "PATH...",
	summary: "settle conflicts: --keep-local pushes the local copy over the remote one, --take-remote replaces the local copy (kept as a backup); --restore puts a backup back",
	example: "silt status                                    # lists conflicts, their reason and seq\n" +
		"silt resolve --keep-local data/acme/bert/config  # then pushes it\n" +
		"silt resolve --take-remote data/acme             # every conflict under a directory\n" +
		"silt resolve --all --take-remote -v\n" +
		"silt resolve --take-remote models/x           # a file/directory clash too: the remote side replaces the local one\n" +
		"silt resolve --keep-local --no-push data/a       # push later with silt push\n" +
		"silt resolve --take-remote --force data/a/1/raw  # even with unpushed edits and no conflict\n" +
		"silt resolve --restore data/a/1/raw              # the backup silt status lists, then silt push",
	maxArgs: -1,
	setup:   setupResolve,
}

func setupResolve(c *cli, fs *flag.FlagSet) runFunc {
	dir := dirFlag(fs)
	local := fs.Bool("keep-local", false, "the local copy (or its deletion) wins; it is pushed unless --no-push")
	remote := fs.Bool("take-remote", false, "the committed copy wins; the local copy is kept as a backup (silt status lists it)")
	restore := fs.Bool("restore", false, "put the newest kept copy of each PATH back in place (marked dirty; the next push sends it)")
	force := fs.Bool("force", false, "with --take-remote: replace a path with unpushed edits and no conflict too")
	all := fs.Bool("all", false, "settle every conflict silt status lists")
	noPush := fs.Bool("no-push", false, "with --keep-local: only settle locally; the next silt push sends the files")
	c.changeFlags(fs)
	return func(ctx context.Context, paths []string) error {
		if *restore {
			return runRestore(ctx, c, *dir, paths, *local || *remote || *all)
		}
		return runResolve(ctx, c, *dir, *local, *remote, *all, *noPush, *force, paths)
	}
}

func runResolve(ctx context.Context, c *cli, dir string, localWins, remoteWins, all, noPush, force bool, paths []string) error {
	local, remote := &localWins, &remoteWins
	switch {
	case *local == *remote:
		return usagef("choose one of --keep-local and --take-remote")
	case len(paths) == 0 && !all:
		return usagef("missing argument: want PATH... or --all")
	case len(paths) > 0 && all:
		return usagef("--all settles every conflict; give it no PATH")
	}
	keep := syncer.TakeRemote
	if *local {
		keep = syncer.KeepLocal
	}
	bd, err := c.openBound(ctx, dir)
	if err != nil {
		return err
	}
	defer bd.Close()
	if paths, err = c.cachePaths(bd.s.Root(), paths); err != nil {
		return err
	}
	if all {
		st, err := bd.s.Status(ctx, false)
		if err != nil {
			return fmt.Errorf("resolve in %s: %w", bd.dir, err)
		}
		for _, cf := range st.Conflicts {
			paths = append(paths, cf.Path)
		}
		if len(paths) == 0 {
			return c.result(map[string]any{"op": "resolve", "resolved": 0}, func() { c.printf("no conflicts to resolve\n") })
		}
	}
	st, err := bd.s.Resolve(ctx, syncer.ResolveOptions{Paths: paths, Keep: keep, Force: force})
	if errors.Is(err, syncer.ErrUnpushedEdits) {
		return &refusedError{msg: fmt.Sprintf("resolve in %s: %v", bd.dir, err),
			hint: "push the edits first (silt push" + c.dirOpt(bd.dir) + "), or replace them with silt resolve" + c.dirOpt(bd.dir) + " --take-remote --force PATH (a backup is kept)"}
	}
	if err != nil {
		return fmt.Errorf("resolve in %s: %w", bd.dir, err)
	}
	out := map[string]any{"op": "resolve", "resolve": st}
	var pushed *syncer.Stats
	if keep == syncer.KeepLocal && !noPush {
		p, err := push(ctx, bd, withSettled(paths, st), syncer.PushOptions{})
		if err != nil {
			return err
		}
		pushed, out["push"] = &p, p
	}
	if err := c.result(out, func() {
		c.printf("resolved %d path%s (%s)\n", len(paths), plural(int64(len(paths))), map[bool]string{true: "kept local", false: "took remote"}[*local])
		if pushed != nil {
			c.printStats(*pushed)
		} else if keep == syncer.KeepLocal {
			c.printf("Next: silt push%s\n", c.dirOpt(bd.dir))
		}
	}); err != nil {
		return err
	}
	if pushed != nil {
		return c.conflicted(*pushed, bd.dir)
	}
	return nil
}

// runRestore is resolve --restore: each PATH's newest kept copy back in
// place, marked dirty.
func runRestore(ctx context.Context, c *cli, dir string, paths []string, other bool) error {
	switch {
	case other:
		return usagef("--restore takes PATH... only (no --keep-local, --take-remote or --all)")
	case len(paths) == 0:
		return usagef("missing argument: --restore PATH...")
	}
	bd, err := c.openBound(ctx, dir)
	if err != nil {
		return err
	}
	defer bd.Close()
	if paths, err = c.cachePaths(bd.s.Root(), paths); err != nil {
		return err
	}
	total := syncer.Stats{Op: "restore", Phases: []syncer.Phase{}}
	for _, p := range paths {
		st, err := bd.s.Restore(ctx, p)
		if err != nil {
			// What the paths before it did: a service's error reply
			// carries no Stats, so the failed one's are left out both ways.
			c.partial(total)
			return fmt.Errorf("restore %s in %s: %w", p, bd.dir, err)
		}
		total = total.Add(st)
	}
	return c.result(map[string]any{"op": "restore", "restore": total}, func() {
		c.printf("restored %d path%s from their kept copies\nNext: silt push%s\n", len(paths), plural(int64(len(paths))), c.dirOpt(bd.dir))
	})
}

// withSettled adds to paths those a resolve settled: a file/directory
// clash is settled at the path where the two kinds meet, which may lie
// above the path given, and its push must cover both sides.
func withSettled(paths []string, st syncer.Stats) []string {
	out := slices.Clone(paths)
	for _, ch := range st.Changes {
		if ch.Action == syncer.ActionResolve && !slices.Contains(out, ch.Path) {
			out = append(out, ch.Path)
		}
	}
	return out
}
