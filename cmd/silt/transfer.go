package main

import (
	"context"
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
	"github.com/siltsync/silt/syncer"
	"github.com/siltsync/silt/watch"
)

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }
func (s *stringsFlag) Type() string       { return "stringArray" }

// conflicted turns an operation that kept conflicting copies into exit
// code 3, after its statistics are printed.
func (c *cli) conflicted(st syncer.Stats, dir string) error {
	if st.Files.Conflicts == 0 {
		return nil
	}
	d := c.dirOpt(dir)
	hint := "see them with silt status" + d + "; settle each with silt resolve" + d + " --keep-local|--take-remote PATH (or --all)"
	refused := 0
	for _, cf := range st.Conflicts {
		if strings.HasPrefix(cf.Reason, syncer.RefusedReason) {
			refused++
		}
	}
	switch {
	case refused > 0 && refused == len(st.Conflicts):
		// resolve cannot settle a name the store cannot hold: only a
		// rename or an exclude rule can.
		hint = "silt cannot store the paths refused above: rename them, or exclude them (.siltignore or --exclude RULE)"
	case refused > 0:
		hint += "; rename or exclude the paths refused (silt cannot store them)"
	}
	return &refusedError{
		msg:  fmt.Sprintf("%s: kept the local copies (listed above)", count(st.Files.Conflicts, "conflict")),
		hint: hint,
	}
}

// maxDeleteFlag declares --max-delete.
func maxDeleteFlag(fs *flag.FlagSet) *int {
	return fs.Int("max-delete", 100, "refuse a push that would delete more than `N` remote files (0 or -1: no limit, as maxDelete 0 in the library and the serve API)")
}

// maxDelete maps --max-delete to PushOptions.MaxDelete, whose 0 is "no
// limit": 0 has that one meaning in the CLI, the library and the serve
// API, and -1 (rclone's spelling) means the same.
func maxDelete(n int) (int, error) {
	if n < 0 {
		return 0, nil
	}
	return n, nil
}

var pullCmd = &command{
	name:    "pull",
	args:    "",
	summary: "bring remote changes into the cache; --scope limits it to paths (and the index shards that cover them)",
	example: "silt pull --dir ./cache -v\nsilt pull --dir ./cache --scope data/acme/bert --scope data/acme/gpt --metadata-only\n" +
		"silt pull --lazy '**/*.bin' --lazy 'data/**/raw'   # record these, fetch later with silt hydrate\n" +
		"silt pull --json --json-changes 100\n" +
		"SILT_TRACE=stderr silt pull                # spans on stderr\n" +
		"silt pull --gcs-credentials key.json       # a credentials file, for a gs:// binding",
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		dir := dirFlag(fs)
		var scope stringsFlag
		fs.Var(&scope, "scope", "pull only this file or directory (`PATH`), relative to the working directory inside the cache (repeatable)")
		meta := fs.Bool("metadata-only", false, "record large payloads (data/**/raw, as --lazy 'data/**/raw') without downloading them; fetch with silt hydrate")
		var lazy stringsFlag
		fs.Var(&lazy, "lazy", "record files matching this `GLOB` (** spans directories) without downloading them (repeatable); fetch with silt hydrate")
		ff := filterFlags(fs)
		reanchor := fs.Bool("reanchor", false, "take the bucket's manifest as it is now, even if this cache saw a higher seq (a mistaken or hostile one): rollback detection starts again from it")
		c.changeFlags(fs)
		return func(ctx context.Context, args []string) error {
			if *meta {
				lazy = append(lazy, "data/**/raw")
			}
			if len(lazy) > 0 {
				fn, err := syncer.LazyGlobs(lazy...)
				if err != nil {
					return usagef("--lazy: %v", err)
				}
				c.lazy = fn
			}
			bd, err := c.openBound(ctx, *dir)
			if err != nil {
				return err
			}
			defer bd.Close()
			if scope, err = c.cachePaths(bd.s.Root(), scope); err != nil {
				return err
			}
			st, err := bd.s.Pull(ctx, syncer.PullOptions{Scope: scope, MetadataOnly: len(lazy) > 0, Lazy: lazy, Exclude: ff.exclude, Include: ff.include, Reanchor: *reanchor})
			if err != nil {
				c.partial(st)
				return fmt.Errorf("pull %s from %s: %w", bd.dir, redactURL(bd.cfg.URL), err)
			}
			var unmatched []string
			if len(lazy) == 0 {
				st, unmatched = c.skipUnmatched(bd, scope, st)
			}
			if err := c.result(st, func() {
				if r := st.Reanchor; r != nil {
					c.printf("re-anchored: this cache had seen seq %d, the bucket's manifest is at seq %d; rollback detection starts from it\n", r.From, r.To)
				}
				c.printStats(st)
			}); err != nil {
				return err
			}
			if err := c.conflicted(st, bd.dir); err != nil || len(unmatched) == 0 {
				return err
			}
			return &noMatchError{unmatched, "in the bucket " + redactURL(bd.cfg.URL), c.dirOpt(bd.dir)}
		}
	},
}

// skipUnmatched reports each --scope path that is absent after a pull (no
// lazy files): it matched no committed file. rclone logs such skips too.
// It returns those paths, for the pull's error.
func (c *cli) skipUnmatched(bd *bound, scope []string, st syncer.Stats) (syncer.Stats, []string) {
	var unmatched []string
	show := c.onChange()
	for _, p := range scope {
		if _, err := os.Lstat(filepath.Join(bd.s.Root(), filepath.FromSlash(p))); err == nil || !errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		unmatched = append(unmatched, p)
		ch := syncer.Change{Path: p, Action: syncer.ActionSkip, Reason: "--scope matches no committed file"}
		if show != nil {
			show(ch)
		}
		if c.maxChanges() > len(st.Changes) {
			st.Changes = append(st.Changes, ch)
		} else {
			st.ChangesOmitted++
		}
	}
	return st, unmatched
}

var pushCmd = &command{
	name:    "push",
	args:    "",
	summary: "upload local changes and commit them; without --path it walks the whole cache, so local deletions of synced files are pushed too",
	example: "silt push --dir ./cache -v\nsilt push --dir ./cache --path data/acme/bert --dry-run\nsilt push --dir ./cache --max-delete 500\n" +
		"silt push --lock deploy --lock-wait 2m   # commit under silt lock's lock, with its fencing token\n" +
		"silt push --json --json-changes 50\n" +
		"silt push --trace spans.jsonl              # OpenTelemetry spans of the push and its phases, as JSON lines\n" +
		"silt push --profile work                   # the AWS shared profile work, for an s3:// binding",
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		dir := dirFlag(fs)
		var paths stringsFlag
		fs.Var(&paths, "path", "push only this file or directory (`PATH`), relative to the working directory inside the cache (repeatable)")
		fs.BoolVar(&c.dryRun, "dry-run", false, "list every change the push would make (past --max-delete too), changing nothing")
		dry := &c.dryRun
		maxDel := maxDeleteFlag(fs)
		lockKey := fs.String("lock", "", "hold the distributed lock `KEY` (as silt lock acquire takes it) while pushing, and commit with its fencing token")
		lockWait := fs.Duration("lock-wait", 0, "with --lock: how long to wait for another holder (0: try once)")
		ff := filterFlags(fs)
		c.changeFlags(fs)
		return func(ctx context.Context, args []string) (err error) {
			md, err := maxDelete(*maxDel)
			if err != nil {
				return err
			}
			if *lockKey != "" {
				if err := backend.ValidateKey(*lockKey); err != nil {
					return usagef("--lock: %v", err)
				}
			}
			bd, err := c.openBound(ctx, *dir)
			if err != nil {
				return err
			}
			defer bd.Close()
			if paths, err = c.cachePaths(bd.s.Root(), paths); err != nil {
				return err
			}
			if none, err := unmatchedPushPaths(ctx, bd, paths); err != nil || len(none) > 0 {
				if err != nil {
					return fmt.Errorf("push %s: %w", bd.dir, err)
				}
				return &noMatchError{none, "locally or in the bucket " + redactURL(bd.cfg.URL), c.dirOpt(bd.dir)}
			}
			opts := syncer.PushOptions{MaxDelete: md, DryRun: *dry, Exclude: ff.exclude, Include: ff.include}
			if *lockKey != "" && !*dry {
				lease, token, err := acquireForPush(ctx, bd, *lockKey, *lockWait)
				if err != nil {
					return err
				}
				if lease != nil { // taken here, not the cache's own held one
					defer func() {
						if rerr := lease.Release(context.WithoutCancel(ctx)); rerr != nil && err == nil {
							err = fmt.Errorf("push --lock %s: release: %w", *lockKey, rerr)
						}
					}()
					ctx = lease.Context() // a lost lease stops the push
				}
				opts.Fence = &syncer.Fence{Key: lockPrefix + *lockKey, Token: token}
			}
			st, err := push(ctx, bd, paths, opts)
			if err != nil {
				c.partial(st)
				return err
			}
			if err := c.result(st, func() {
				c.printStats(st)
				if *dry {
					c.printf("dry run: nothing was changed\n")
				}
				if stray := strayEntries(bd.dir, bd.cfg.Namespace); len(stray) > 0 {
					c.printf("note: namespace %s syncs only %s; ignored: %s\n", bd.cfg.Namespace, bd.s.Root(), strings.Join(stray, ", "))
				}
			}); err != nil {
				return err
			}
			return c.conflicted(st, bd.dir)
		}
	},
}

// push pushes exactly paths (not marks left from an earlier push) or, with
// no paths, walks the whole cache.
func push(ctx context.Context, bd *bound, paths []string, opts syncer.PushOptions) (syncer.Stats, error) {
	opts.Paths = paths
	opts.All = len(paths) == 0
	st, err := bd.s.Push(ctx, opts)
	if errors.Is(err, index.ErrInvalidPath) && len(paths) > 0 {
		return st, usagef("--path: %v", err)
	}
	if err != nil {
		return st, fmt.Errorf("push %s to %s: %w", bd.dir, redactURL(bd.cfg.URL), err)
	}
	return st, nil
}

var syncCmd = &command{
	name:    "sync",
	args:    "",
	summary: "pull, then push the whole cache; files a --lazy pull left out stay lazy",
	example: "silt sync --dir ./cache\nsilt sync -v --max-delete 500\nsilt sync --json --json-changes 0   # counts only\n" +
		"silt sync --watch                    # until Ctrl-C: local changes pushed as they happen, remote ones pulled every second\n" +
		"silt sync --watch --poll 10s --debounce 1s --json   # one JSON line per step that changed something",
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		dir := dirFlag(fs)
		maxDel := maxDeleteFlag(fs)
		ff := filterFlags(fs)
		wf := watchFlagsOf(fs)
		c.changeFlags(fs)
		return func(ctx context.Context, args []string) error {
			md, err := maxDelete(*maxDel)
			if err != nil {
				return err
			}
			if err := wf.usage(fs); err != nil {
				return err
			}
			bd, err := c.openBound(ctx, *dir)
			if err != nil {
				return err
			}
			defer bd.Close()
			if *wf.on {
				return c.runWatch(ctx, bd, wf, watch.Options{MaxDelete: md, Exclude: ff.exclude, Include: ff.include})
			}
			pulled, err := bd.s.Pull(ctx, syncer.PullOptions{KeepLazy: true, Exclude: ff.exclude, Include: ff.include})
			if err != nil {
				c.partial(map[string]any{"op": "sync", "pull": pulled})
				return fmt.Errorf("sync (pull) %s from %s: %w", bd.dir, redactURL(bd.cfg.URL), err)
			}
			pushed, err := push(ctx, bd, nil, syncer.PushOptions{MaxDelete: md, Exclude: ff.exclude, Include: ff.include})
			if err != nil {
				c.partial(map[string]any{"op": "sync", "pull": pulled, "push": pushed})
				return err
			}
			total := pulled.Add(pushed)
			out := map[string]any{"op": "sync", "seq": total.Seq, "pull": pulled, "push": pushed,
				"changes": total.Changes, "changes_omitted": total.ChangesOmitted, "files": total.Files, "bytes": total.Bytes, "requests": total.Requests, "local": total.Local, "ms": total.Ms}
			if err := c.result(out, func() { c.printStats(pulled); c.printStats(pushed) }); err != nil {
				return err
			}
			return c.conflicted(total, bd.dir)
		}
	},
}

var hydrateCmd = &command{
	name:    "hydrate",
	args:    "PATH...",
	summary: "download files a --metadata-only pull left out: one file, or every one under a directory",
	example: "silt hydrate --dir ./cache data/acme/bert/state/3/raw\nsilt hydrate data/acme/bert        # a whole subtree",
	minArgs: 1, maxArgs: -1,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		dir := dirFlag(fs)
		c.changeFlags(fs)
		return func(ctx context.Context, paths []string) error {
			bd, err := c.openBound(ctx, *dir)
			if err != nil {
				return err
			}
			defer bd.Close()
			if paths, err = c.cachePaths(bd.s.Root(), paths); err != nil {
				return err
			}
			total := syncer.Stats{Op: "hydrate", Phases: []syncer.Phase{}}
			for _, p := range paths {
				ok, st, err := hydrate(ctx, bd, p)
				total = total.Add(st)
				if err != nil {
					c.partial(total)
					return fmt.Errorf("hydrate %s in %s: %w", p, bd.dir, err)
				}
				if !ok {
					return withHint(fmt.Errorf("hydrate %s: no committed file at or under it in %s", p, redactURL(bd.cfg.URL)),
						"list what the index holds with: silt ls"+c.dirOpt(bd.dir))
				}
			}
			return c.result(total, func() { c.printStats(total) })
		}
	},
}

// hydrate fetches one file, or every file a --metadata-only pull left out
// under a directory (a full pull of that scope, which hydrates).
func hydrate(ctx context.Context, bd *bound, p string) (bool, syncer.Stats, error) {
	if fi, err := os.Stat(filepath.Join(bd.s.Root(), filepath.FromSlash(p))); err != nil || !fi.IsDir() {
		ok, st, err := bd.s.HydrateFile(ctx, p)
		if ok || err != nil {
			return ok, st, err
		}
	}
	st, err := bd.s.Pull(ctx, syncer.PullOptions{Scope: []string{p}})
	f := st.Files
	if err == nil && f.Downloaded+f.Unchanged+f.Conflicts == 0 {
		// A scope a pull already synced reads nothing and counts nothing:
		// a directory it left in the cache is hydrated already.
		fi, serr := os.Stat(filepath.Join(bd.s.Root(), filepath.FromSlash(p)))
		return serr == nil && fi.IsDir(), st, nil
	}
	return true, st, err
}

// acquireForPush takes the lock a push commits under: the same object as
// silt lock's KEY in the cache's namespace. When the cache holds it
// already (silt lock acquire KEY on this cache), the push commits under
// that lease's token and returns no lease to release.
func acquireForPush(ctx context.Context, bd *bound, key string, wait time.Duration) (*lock.Lease, uint64, error) {
	if bd.b == nil {
		return nil, 0, fmt.Errorf("push --lock %s: the bucket %s cannot be opened here to take the lock", key, redactURL(bd.cfg.URL))
	}
	root, err := namespaceOf(bd.b, bd.cfg.Namespace)
	if err != nil {
		return nil, 0, err
	}
	if wait <= 0 {
		wait = -1 // lock: try once
	}
	l, err := lock.New(root, lockPrefix+key, lock.Options{MaxWait: wait})
	if err != nil {
		return nil, 0, err
	}
	if token, ok, err := ownLease(ctx, l, bd.dir, bd.cfg, key); err != nil || ok {
		return nil, token, err
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		return nil, 0, lockHeldError("push --lock "+key, "--lock-wait", err)
	}
	return lease, lease.Token(), nil
}

// statusShown bounds the changes status lists without -v.
const statusShown = 10

// printChanges lists the files a push would change (not the unchanged
// ones, nor conflicts, listed apart): at most statusShown without -v.
func (c *cli) printChanges(changes []syncer.Change, omitted int) {
	shown := 0
	for _, ch := range changes {
		if ch.Action == syncer.ActionConflict {
			continue
		}
		if !c.verbose && shown == statusShown {
			omitted++
			continue
		}
		shown++
		ch.DryRun = false
		c.printf("  %s\n", changeLine(ch))
	}
	if omitted > 0 {
		c.printf("  ... and %d more (silt status -v lists them all; --json too, up to --json-changes)\n", omitted)
	}
}
