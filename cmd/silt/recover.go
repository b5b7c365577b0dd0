package main

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/index"
)

func init() { commands = append(commands, recoverCmd) }

var recoverCmd = &command{
	name:    "recover",
	args:    "[URL]",
	summary: "re-commit the newest readable snapshot (or --seq N) as a new commit: undoes a lost, damaged or replaced manifest, or a bad push",
	example: "silt recover --dry-run s3://my-bucket\nsilt recover s3://my-bucket          # after: manifest is missing but the bucket holds its history\n" +
		"silt recover --seq 41 s3://my-bucket   # undo the pushes after snapshot 41 (they stay in silt log)",
	maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to recover")
		seq := fs.Uint64("seq", 0, "re-commit this snapshot (see silt log) instead of the newest readable one")
		dry := fs.Bool("dry-run", false, "report what would be committed, writing nothing")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 1, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			rep, err := index.Recover(ctx, ob.root, index.RecoverOptions{Seq: *seq, DryRun: *dry})
			if err != nil {
				return fmt.Errorf("recover %s: %w", ob.url, err)
			}
			return c.result(map[string]any{"op": "recover", "report": rep}, func() {
				c.printf("manifest: %s", rep.Manifest)
				if rep.Manifest == "ok" {
					c.printf(" at seq %d", rep.Current)
				}
				c.printf("; %s (newest seq %d)\n", countOf(rep.History, "history copy", "history copies"), rep.Newest)
				for _, s := range rep.Skipped {
					c.printf("skipped snapshot %d: %s\n", s.Seq, s.Reason)
				}
				switch {
				case rep.NoOp && rep.History == 0 && rep.Manifest != "ok":
					c.printf("nothing to recover: no manifest and no history (a fresh bucket)\n")
				case rep.NoOp:
					c.printf("nothing to recover: snapshot %d (%s) is current\n", rep.From, count(rep.Entries, "file"))
				case rep.DryRun:
					c.printf("would re-commit snapshot %d (%s, %s) as a new commit above seq %d\n", rep.From, count(rep.Entries, "file"), count(rep.Shards, "shard"), max(rep.Current, rep.Newest))
				default:
					c.printf("re-committed snapshot %d (%s, %s) as seq %d\n", rep.From, count(rep.Entries, "file"), count(rep.Shards, "shard"), rep.Seq)
				}
			})
		}
	},
}
