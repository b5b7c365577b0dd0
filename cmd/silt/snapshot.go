package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/siltsync/silt/index"
)

var logCmd = &command{
	name:    "log",
	args:    "[URL]",
	summary: "list the snapshots still readable: the current one and the manifest history GC has kept",
	example: "silt log s3://my-bucket\nsilt log                    # inside a cache: its bound bucket (or $SILT_REMOTE)",
	run: func(ctx context.Context, c *cli, args []string) error {
		fs := c.newFlags()
		ns := fs.String("namespace", "", "the namespace to read")
		pos, err := c.parse(fs, args, 0, 1)
		if err != nil {
			return err
		}
		if pos, err = c.withRemote(pos, 0, 1, ns); err != nil {
			return err
		}
		b, root, err := openRoot(ctx, pos[0], *ns)
		if err != nil {
			return err
		}
		defer b.Close()
		entries, err := index.Log(ctx, root)
		if err != nil {
			return fmt.Errorf("log %s: %w", pos[0], err)
		}
		return c.result(map[string]any{"op": "log", "snapshots": entries}, func() {
			for _, e := range entries {
				when := "current"
				if !e.Current {
					when = "superseded " + e.Superseded.UTC().Format("2006-01-02T15:04:05Z")
				}
				c.printf("seq %d  %d files  %d shards  %s\n", e.Seq, e.Entries, e.Shards, when)
			}
		})
	},
}

// snapshotAt opens the snapshot at seq ("" = current) of url's namespace;
// done closes the store.
func snapshotAt(ctx context.Context, url, ns, seq string) (*index.Snapshot, func(), error) {
	b, root, err := openRoot(ctx, url, ns)
	if err != nil {
		return nil, nil, err
	}
	var snap *index.Snapshot
	if seq == "" {
		snap, err = index.OpenSnapshot(ctx, root)
	} else {
		n, perr := strconv.ParseUint(seq, 10, 64)
		if perr != nil {
			b.Close()
			return nil, nil, usagef("--seq %q: not a sequence number", seq)
		}
		snap, err = index.OpenSnapshotAt(ctx, root, n)
	}
	if err != nil {
		b.Close()
		return nil, nil, fmt.Errorf("%s: %w", url, err)
	}
	return snap, func() { b.Close() }, nil
}

var checkCmd = &command{
	name:    "check",
	args:    "[URL]",
	summary: "check that every object a snapshot references exists with its size (--data: read and verify the bytes)",
	example: "silt check s3://my-bucket\nsilt check --data --seq 41 s3://my-bucket\nsilt check                  # inside a cache: its bound bucket (or $SILT_REMOTE)",
	run: func(ctx context.Context, c *cli, args []string) error {
		fs := c.newFlags()
		ns := fs.String("namespace", "", "the namespace to read")
		seq := fs.String("seq", "", "check this snapshot instead of the current one")
		data := fs.Bool("data", false, "read every object and verify its sha256")
		pos, err := c.parse(fs, args, 0, 1)
		if err != nil {
			return err
		}
		if pos, err = c.withRemote(pos, 0, 1, ns); err != nil {
			return err
		}
		snap, done, err := snapshotAt(ctx, pos[0], *ns, *seq)
		if err != nil {
			return err
		}
		defer done()
		rep, err := snap.Check(ctx, *data)
		if err != nil {
			return fmt.Errorf("check %s at seq %d: %w", pos[0], snap.Seq(), err)
		}
		return c.result(map[string]any{"op": "check", "ok": true, "data": *data, "report": rep}, func() {
			c.printf("ok: seq %d, %d shards, %d entries, %d objects", rep.Seq, rep.Shards, rep.Entries, rep.Objects)
			if *data {
				c.printf(", %d bytes read and verified", rep.Bytes)
			}
			c.printf("\n")
		})
	},
}

var exportCmd = &command{
	name:    "export",
	args:    "[URL] DEST",
	summary: "materialise a snapshot at real paths in DEST (a directory, or a URL of any store), bytes verified",
	example: "silt export s3://my-bucket ./browse\nsilt export --seq 41 --prefix data/acme s3://my-bucket file:///srv/acme-at-41",
	run: func(ctx context.Context, c *cli, args []string) error {
		fs := c.newFlags()
		ns := fs.String("namespace", "", "the namespace to read")
		seq := fs.String("seq", "", "export this snapshot instead of the current one")
		prefix := fs.String("prefix", "", "export only this file or directory")
		pos, err := c.parse(fs, args, 1, 2)
		if err != nil {
			return err
		}
		if pos, err = c.withRemote(pos, 1, 2, ns); err != nil {
			return err
		}
		snap, done, err := snapshotAt(ctx, pos[0], *ns, *seq)
		if err != nil {
			return err
		}
		defer done()
		dest := pos[1]
		if !strings.Contains(dest, "://") {
			abs, err := filepath.Abs(dest)
			if err != nil {
				return err
			}
			dest = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
		}
		dst, err := openURL(ctx, dest)
		if err != nil {
			return err
		}
		defer dst.Close()
		rep, err := snap.Export(ctx, dst, strings.TrimSuffix(*prefix, "/"))
		if err != nil {
			return fmt.Errorf("export %s to %s: %w", pos[0], dest, err)
		}
		return c.result(map[string]any{"op": "export", "dest": dest, "report": rep}, func() {
			c.printf("exported seq %d: %d files, %s to %s\n", rep.Seq, rep.Files, size(rep.Bytes), dest)
		})
	},
}
