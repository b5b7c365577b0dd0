package main

import (
	"context"
	"fmt"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/syncer"
)

var statusCmd = &command{
	name:    "status",
	args:    "",
	summary: "show marked paths, what a push would send, and whether the remote moved since the last pull",
	example: "silt status --dir ./cache\nsilt status --dir ./cache --offline\nsilt status            # inside a cache: also lists conflicts (reason, seq) and lazy files\nsilt status -v         # also the store: endpoint, region, credential source (never a secret), namespace",
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		dir := dirFlag(fs)
		offline := fs.Bool("offline", false, "send no request: skip the remote check and the planned push")
		ff := filterFlags(fs)
		return func(ctx context.Context, args []string) error {
			c.listChanges = true // status lists the planned changes itself, on stdout
			if c.verbose {
				c.jsonChanges = 1 << 30 // -v lists every change
			}
			bd, err := c.openBound(ctx, *dir)
			if err != nil {
				return err
			}
			defer bd.Close()
			st, err := bd.s.Status(ctx, !*offline)
			if err != nil {
				return fmt.Errorf("status of %s: %w", bd.dir, err)
			}
			out := map[string]any{"op": "status", "dir": bd.dir, "url": redactURL(bd.cfg.URL), "status": st}
			var store *storeInfo
			if c.verbose {
				store = describeStore(bd)
				out["store"] = store
			}
			var plan *syncer.Stats
			settled := map[string]bool{}
			if !*offline {
				// What `silt push` would do: a dry run over the whole cache,
				// against the remote index.
				p, err := bd.s.Push(ctx, syncer.PushOptions{DryRun: true, All: true, Exclude: ff.exclude, Include: ff.include})
				if err != nil {
					return fmt.Errorf("status of %s (planning a push): %w", bd.dir, err)
				}
				settled = currentReasons(&p, st.Conflicts)
				plan = &p
				out["push"] = map[string]int{"upload": p.Files.Uploaded, "delete": p.Files.Deleted, "conflicts": p.Files.Conflicts, "excluded": p.Files.Excluded, "skipped": p.Files.Skipped}
				// What this walk left out, rather than the last recorded one.
				st.Excluded, st.Skipped, st.SkippedList = p.Files.Excluded, p.Files.Skipped, p.Skipped
				out["changes"], out["changes_omitted"] = p.Changes, p.ChangesOmitted
			}
			return c.result(out, func() {
				c.printf("cache %s <-> %s\n", bd.dir, redactURL(bd.cfg.URL))
				if store != nil {
					store.print(c)
				}
				if plan != nil {
					c.printf("unpushed: %d to upload, %d to delete, %s\n", plan.Files.Uploaded, plan.Files.Deleted, count(plan.Files.Conflicts, "conflict"))
					c.printChanges(plan.Changes, plan.ChangesOmitted)
					for _, cf := range plan.Conflicts {
						if !settled[cf.Path] { // a recorded conflict is listed below
							c.printf("  conflict: %s: %s\n", shown(cf.Path), cf.Reason)
						}
					}
				}
				if len(st.Conflicts) > 0 {
					c.printf("conflicts: %d (settle with silt resolve --keep-local|--take-remote PATH)\n", len(st.Conflicts))
					for _, cf := range st.Conflicts {
						c.printf("  %s: %s (%s at seq %d)\n", shown(cf.Path), cf.Reason, cf.Op, cf.Seq)
						if cf.Copy != "" {
							c.printf("    your copy: %s\n", filepath.Join(bd.dir, filepath.FromSlash(cf.Copy)))
						}
					}
				}
				if len(st.Backups) > 0 {
					c.printf("backups: %s silt replaced and kept (put one back with silt resolve --restore PATH)\n", countOf(len(st.Backups), "local copy", "local copies"))
					for _, b := range st.Backups {
						c.printf("  %s: %s (%s)\n", shown(b.Path), filepath.Join(bd.dir, filepath.FromSlash(b.Copy)), b.Reason)
					}
				}
				if st.Lazy > 0 {
					c.printf("lazy: %s recorded without their bytes (fetch with silt hydrate PATH)\n", count(st.Lazy, "file"))
				}
				if st.Excluded > 0 {
					c.printf("excluded: %s (by .siltignore and --exclude; a directory counts once)\n", count(st.Excluded, "path"))
				}
				if st.Skipped > 0 {
					c.printf("skipped: %d (not regular files; silt syncs regular files only)\n", st.Skipped)
					for _, sk := range st.SkippedList {
						c.printf("  %s: %s\n", shown(sk.Path), sk.Kind)
					}
					if n := st.Skipped - len(st.SkippedList); n > 0 {
						c.printf("  ... and %d more\n", n)
					}
				}
				c.printf("marked dirty: %s", count(len(st.Dirty), "path"))
				if st.Overflow {
					c.printf(" (overflowed: the next push walks everything)")
				}
				c.printf("\n")
				for _, p := range st.Dirty {
					c.printf("  %s\n", p)
				}
				switch {
				case *offline:
					c.printf("remote: not checked (--offline); last seen seq %d\n", st.SeenSeq)
				case st.RemoteMoved:
					c.printf("remote: moved from seq %d to %d; run silt pull%s\n", st.SeenSeq, st.RemoteSeq, c.dirOpt(bd.dir))
				case st.PullIncomplete:
					c.printf("remote: at seq %d, but the last pull stopped part way (what it installed stays); run silt pull%s\n", st.RemoteSeq, c.dirOpt(bd.dir))
				default:
					c.printf("remote: up to date at seq %d\n", st.RemoteSeq)
				}
			})
		}
	},
}

// currentReasons gives the planned push's conflicts on paths with a
// recorded conflict the recorded reason, which the last operation (a pull,
// say) set: the plan's own ("pull first") is stale once pulled. It returns
// those paths.
func currentReasons(plan *syncer.Stats, recorded []syncer.ConflictRecord) map[string]bool {
	reason := map[string]string{}
	for _, cf := range recorded {
		reason[cf.Path] = cf.Reason
	}
	settled := map[string]bool{}
	for i, cf := range plan.Conflicts {
		if r, ok := reason[cf.Path]; ok {
			plan.Conflicts[i].Reason = r
			settled[cf.Path] = true
		}
	}
	for i, ch := range plan.Changes {
		if r, ok := reason[ch.Path]; ok && ch.Action == syncer.ActionConflict {
			plan.Changes[i].Reason = r
		}
	}
	return settled
}
