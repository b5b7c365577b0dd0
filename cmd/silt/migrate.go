package main

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/index"
)

func init() { commands = append(commands, migrateCmd) }

var migrateCmd = &command{
	name:    "migrate",
	args:    "[URL]",
	summary: "turn a bucket of an older format (2, 3 or 4) into the log of deltas, online; every snapshot stays listed",
	example: "silt migrate --dry-run s3://my-bucket\nsilt migrate s3://my-bucket\nsilt migrate --namespace team-a   # inside a cache: its bound bucket (or $SILT_REMOTE)",
	maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to migrate")
		dry := fs.Bool("dry-run", false, "report what would be written, writing nothing")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 1, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			rep, err := index.Migrate(ctx, ob.root, index.MigrateOptions{DryRun: *dry})
			if err != nil {
				return fmt.Errorf("migrate %s: %w", ob.url, err)
			}
			return c.result(map[string]any{"op": "migrate", "report": rep}, func() {
				switch {
				case rep.Empty:
					c.printf("nothing committed yet: the first push creates the bucket in the format its cache asks for\n")
					return
				case rep.Already && len(rep.Writes) == 0:
					c.printf("already in format %d (seq %d): nothing to do\n", rep.To, rep.Seq)
					return
				}
				verb := "wrote"
				if rep.DryRun {
					verb = "would write"
				}
				for _, k := range rep.Writes {
					c.printf("%s %s\n", verb, k)
				}
				if rep.Finished {
					c.printf("finished an interrupted migration (format %d, seq %d)\n", rep.To, rep.Seq)
					return
				}
				what := "migrated"
				if rep.DryRun {
					what = "would migrate"
				}
				entries := "entries"
				if rep.Entries == 1 {
					entries = "entry"
				}
				c.printf("%s format %d to %d at seq %d: %d %s in %d shard%s carried over; older snapshots stay in silt log until gc's grace period passes\n",
					what, rep.From, rep.To, rep.Seq, rep.Entries, entries, rep.Shards, plural(int64(rep.Shards)))
			})
		}
	},
}
