package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/index"
)

var logCmd = &command{
	name:    "log",
	args:    "[URL]",
	summary: "list the snapshots still readable: the current one and the manifest history GC has kept",
	example: "silt log s3://my-bucket\nsilt log                    # inside a cache: its bound bucket (or $SILT_REMOTE)",
	maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to read")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 1, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			entries, err := index.Log(ctx, ob.root)
			if err != nil {
				return fmt.Errorf("log %s: %w", ob.url, err)
			}
			return c.result(map[string]any{"op": "log", "snapshots": entries}, func() {
				for _, e := range entries {
					when := "current"
					if !e.Current {
						when = "superseded " + e.Superseded.UTC().Format("2006-01-02T15:04:05Z")
					}
					c.printf("seq %d  %s  %s  %s\n", e.Seq, count(e.Entries, "file"), count(e.Shards, "shard"), when)
				}
			})
		}
	},
}

// snapshotAt opens the snapshot at seq ("" = current) of ob's namespace.
func snapshotAt(ctx context.Context, ob *onBucket, seq string) (*index.Snapshot, error) {
	if seq == "" {
		snap, err := index.OpenSnapshot(ctx, ob.root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ob.url, err)
		}
		return snap, nil
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return nil, usagef("--seq %q: not a sequence number", seq)
	}
	snap, err := index.OpenSnapshotAt(ctx, ob.root, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ob.url, err)
	}
	return snap, nil
}

var checkCmd = &command{
	name:    "check",
	args:    "[URL]",
	summary: "check that every object a snapshot references exists with its size (--data: read and verify the bytes)",
	example: "silt check s3://my-bucket\nsilt check --data --seq 41 s3://my-bucket\nsilt check                  # inside a cache: its bound bucket (or $SILT_REMOTE)",
	maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to read")
		seq := fs.String("seq", "", "check this snapshot instead of the current one")
		data := fs.Bool("data", false, "read every object and verify its sha256")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 1, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			snap, err := snapshotAt(ctx, ob, *seq)
			if err != nil {
				return err
			}
			rep, err := snap.Check(ctx, *data)
			if err != nil {
				return fmt.Errorf("check %s at seq %d: %w", ob.url, snap.Seq(), err)
			}
			return c.result(map[string]any{"op": "check", "ok": true, "data": *data, "report": rep}, func() {
				c.printf("ok: seq %d, %s, %s, %s", rep.Seq, count(rep.Shards, "shard"), countOf(rep.Entries, "entry", "entries"), count(rep.Objects, "object"))
				if *data {
					c.printf(", %s read and verified", count(rep.Bytes, "byte"))
				}
				c.printf("\n")
			})
		}
	},
}

var exportCmd = &command{
	name:    "export",
	args:    "[URL] DEST",
	summary: "materialise a snapshot at real paths in DEST (a directory, or a URL of any store), bytes verified",
	example: "silt export s3://my-bucket ./browse\nsilt export --seq 41 --prefix data/acme s3://my-bucket file:///srv/acme-at-41",
	minArgs: 1, maxArgs: 2, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to read")
		seq := fs.String("seq", "", "export this snapshot instead of the current one")
		prefix := fs.String("prefix", "", "export only this file or directory")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 1, 2, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			snap, err := snapshotAt(ctx, ob, *seq)
			if err != nil {
				return err
			}
			dest := ob.args[0]
			if !strings.Contains(dest, "://") {
				abs, err := filepath.Abs(dest)
				if err != nil {
					return err
				}
				dest = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
			}
			drop := dropFSState(dest)               // before the store makes it
			dst, err := openStore(ctx, dest, false) // the store flags are for the source
			if err != nil {
				drop()
				return err
			}
			defer drop() // after dst.Close: the tree holds the snapshot's files only
			defer dst.Close()
			rep, err := snap.Export(ctx, dst, strings.TrimSuffix(*prefix, "/"))
			if err != nil {
				return fmt.Errorf("export %s to %s: %w", ob.url, dest, err)
			}
			return c.result(map[string]any{"op": "export", "dest": dest, "report": rep}, func() {
				c.printf("exported seq %d: %s, %s to %s\n", rep.Seq, count(rep.Files, "file"), size(rep.Bytes), dest)
			})
		}
	},
}

// dropFSState returns a function that removes the file:// store's own
// directory (.silt-fs: write temp files and lock files) from the
// directory dest names, unless it was there before: an exported tree is
// for people and tools to browse, and holds the snapshot's files only.
func dropFSState(dest string) func() {
	u, err := url.Parse(dest)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return func() {}
	}
	state := filepath.Join(filepath.FromSlash(u.Path), ".silt-fs")
	if _, err := os.Lstat(state); err == nil {
		return func() {}
	}
	return func() { os.RemoveAll(state) }
}
