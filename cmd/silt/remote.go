package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/conformance/check"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/namespace"
	"github.com/siltsync/silt/verify"
)

// openRoot opens a bucket URL at a namespace root, for commands that read
// or write a bucket without a cache directory.
func openRoot(ctx context.Context, url, ns string) (backend.Backend, backend.Backend, error) {
	if ns != "" {
		if err := namespace.Validate(ns); err != nil {
			return nil, nil, usagef("--namespace: %v", err)
		}
	}
	b, err := openURL(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	root, _ := namespaceOf(b, ns)
	return b, root, nil
}

// lsEntry is one line of `silt ls`.
type lsEntry struct {
	Path string `json:"path"`
	index.Entry
}

var lsCmd = &command{
	name:    "ls",
	args:    "[URL] [PREFIX]",
	summary: "list committed files through the index (never by listing the bucket)",
	example: "silt ls file:///srv/bucket\nsilt ls --namespace team-a s3://my-bucket data/acme --long\nsilt ls data/acme          # inside a cache: its bound bucket (or $SILT_REMOTE)\n" +
		"silt ls --profile work s3://my-bucket\nsilt ls s3://my-bucket?profile=work\nsilt ls --gcs-credentials key.json gs://my-bucket\nsilt ls gs://my-bucket?credentials=key.json",
	maxArgs: 2, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to read")
		long := fs.Bool("long", false, "show sha256 and commit seq")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 2, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			prefix := ""
			if len(ob.args) == 1 {
				if prefix, err = ob.path(c, ob.args[0]); err != nil {
					return err
				}
			}
			snap, err := index.OpenSnapshot(ctx, ob.root)
			if err != nil {
				return fmt.Errorf("ls %s: %w", ob.url, err)
			}
			entries := []lsEntry{}
			var total int64
			err = snap.Walk(ctx, prefix, func(p string, e index.Entry) error {
				entries = append(entries, lsEntry{p, e})
				total += e.Size
				return nil
			})
			if err != nil {
				return fmt.Errorf("ls %s %s: %w", ob.url, prefix, err)
			}
			seq := snap.Manifest().Seq
			if len(entries) == 0 && prefix != "" {
				c.partial(map[string]any{"op": "ls", "seq": seq, "count": 0, "bytes": 0, "entries": entries})
				return &noMatchError{[]string{prefix}, "in the bucket " + ob.url, ob.lsArgs()}
			}
			return c.result(map[string]any{"op": "ls", "seq": seq, "count": len(entries), "bytes": total, "entries": entries}, func() {
				for _, e := range entries {
					if *long {
						c.printf("%10d  %s  %4d  %s\n", e.Size, e.SHA256[:12], e.Seq, shown(e.Path))
					} else {
						c.printf("%10d  %s\n", e.Size, shown(e.Path))
					}
				}
			})
		}
	},
}

var catCmd = &command{
	name:    "cat",
	args:    "[URL] PATH",
	summary: "print a committed file, read from its content-addressed object and verified by sha256",
	example: "silt cat file:///srv/bucket data/acme/bert/state/latest\nSILT_REMOTE=s3://my-bucket silt cat data/acme/bert/state/latest",
	minArgs: 1, maxArgs: 2, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to read")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 1, 2, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			url, root := ob.url, ob.root
			p, err := ob.path(c, ob.args[0])
			if err != nil {
				return err
			}
			snap, err := index.OpenSnapshot(ctx, root)
			if err != nil {
				return fmt.Errorf("cat %s: %w", url, err)
			}
			e, ok, err := snap.Lookup(ctx, p)
			if err != nil {
				return fmt.Errorf("cat %s %s: %w", url, p, err)
			}
			if !ok {
				return withHint(fmt.Errorf("cat %s: no committed file %q at seq %d", url, p, snap.Manifest().Seq),
					"list what the index holds with: silt ls"+ob.lsArgs())
			}
			data, err := readVerified(ctx, root, p, e)
			if err != nil {
				return fmt.Errorf("cat %s %s: %w", url, p, err)
			}
			defer data.Close()
			if c.json {
				body, err := io.ReadAll(data)
				if err != nil {
					return fmt.Errorf("cat %s %s: %w", url, p, err)
				}
				return c.printJSON(map[string]any{"op": "cat", "path": p, "size": e.Size, "sha256": e.SHA256,
					"seq": e.Seq, "verified": true, "content_base64": base64.StdEncoding.EncodeToString(body)})
			}
			if _, err := io.Copy(c.stdout, data); err != nil {
				return fmt.Errorf("cat %s %s: %w", url, p, err)
			}
			return nil
		}
	},
}

// catInMemory is the largest file cat verifies in memory; a larger one is
// spooled to a temporary file first.
const catInMemory = 32 << 20

// readVerified reads the committed file p whole and checks its size and
// sha256 against e before returning its bytes, so that cat never prints a
// byte of a damaged object.
func readVerified(ctx context.Context, root backend.Backend, p string, e index.Entry) (io.ReadCloser, error) {
	rc, err := index.Open(ctx, root, p, e)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h := sha256.New()
	var spool interface {
		io.Writer
		io.ReadSeeker
	}
	var closer func() error
	if e.Size <= catInMemory {
		spool = &memSpool{}
		closer = func() error { return nil }
	} else {
		f, err := os.CreateTemp("", "silt-cat-")
		if err != nil {
			return nil, err
		}
		os.Remove(f.Name()) // gone when closed, even on a crash (where the OS allows)
		spool, closer = f, f.Close
	}
	n, err := io.Copy(io.MultiWriter(h, spool), rc)
	if err == nil {
		if sum := hex.EncodeToString(h.Sum(nil)); sum != e.SHA256 || n != e.Size {
			err = fmt.Errorf("%w: read %d bytes with sha256 %s, the index says %d bytes with %s; nothing was printed",
				index.ErrCorruptObject, n, sum, e.Size, e.SHA256)
		}
	}
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		closer()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{spool, closerFunc(closer)}, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// memSpool is an in-memory io.Writer and io.ReadSeeker.
type memSpool struct {
	buf []byte
	r   *bytes.Reader
}

func (m *memSpool) Write(p []byte) (int, error) { m.buf = append(m.buf, p...); return len(p), nil }

func (m *memSpool) Read(p []byte) (int, error) {
	if m.r == nil {
		m.r = bytes.NewReader(m.buf)
	}
	return m.r.Read(p)
}

func (m *memSpool) Seek(off int64, whence int) (int64, error) {
	m.r = bytes.NewReader(m.buf)
	return m.r.Seek(off, whence)
}

var gcCmd = &command{
	name:    "gc",
	args:    "[URL]",
	summary: "remove shards, data objects and manifest history no snapshot of the grace period references (mark and sweep)",
	example: "silt gc --dry-run s3://my-bucket\nsilt gc --older-than 24h --namespace team-a s3://my-bucket\nsilt gc --dry-run           # inside a cache: its bound bucket (or $SILT_REMOTE)",
	maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "the namespace to collect")
		dry := fs.Bool("dry-run", false, "report what would be removed, removing nothing")
		older := fs.Duration("older-than", index.DefaultGCOlderThan, "grace period: snapshots current within it stay whole, and younger unreferenced objects are kept")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 1, true)
			if err != nil {
				return err
			}
			defer ob.Close()
			if *older < 0 {
				return usagef("--older-than must not be negative")
			}
			rep, err := index.GC(ctx, ob.root, index.GCOptions{OlderThan: *older, DryRun: *dry})
			if err != nil {
				return fmt.Errorf("gc %s: %w", ob.url, err)
			}
			return c.result(map[string]any{"op": "gc", "report": rep}, func() {
				verb := "removed"
				if rep.DryRun {
					verb = "would remove"
				}
				// In the order gc removes them: a snapshot leaves the log
				// before the data only it names.
				for _, o := range rep.History {
					c.printf("%s history %s (%s)\n", verb, o.Key, size(o.Size))
				}
				for _, o := range rep.Shards {
					c.printf("%s shard %s (%s)\n", verb, o.Key, size(o.Size))
				}
				for _, o := range rep.Data {
					c.printf("%s data  %s (%s)\n", verb, o.Key, size(o.Size))
				}
				for _, o := range rep.Packs {
					c.printf("%s pack  %s (%s)\n", verb, o.Key, size(o.Size))
				}
				for _, o := range rep.Repack.Packs {
					c.printf("repacked %s (%s)\n", o.Key, size(o.Size))
				}
				c.printf("gc seq %d: %s %s and %s, %s; kept %d younger than %v", rep.Seq, verb,
					count(len(rep.Shards), "shard"), count(len(rep.Data), "data object"), size(rep.Bytes), rep.Recent, *older)
				if len(rep.Packs) > 0 {
					c.printf("; %s", count(len(rep.Packs), "pack"))
				}
				if len(rep.History) > 0 {
					c.printf("; %s past the grace period", countOf(len(rep.History), "manifest history copy", "manifest history copies"))
				}
				if n := len(rep.Repack.Packs); n > 0 {
					c.printf("; repacked %s into %d (seq %d)", count(n, "pack"), rep.Repack.Written, rep.Repack.Seq)
				}
				c.printf("\n")
				if rep.Repack.GaveUp != "" {
					c.printf("repack gave up this round (a later gc tries again): %s\n", rep.Repack.GaveUp)
				}
			})
		}
	},
}

var verifyCmd = &command{
	name:    "verify",
	args:    "[URL]",
	summary: "check a store is reachable, its index readable, and that it honours If-None-Match (and If-Match where it claims it) under contention",
	example: "silt verify s3://my-bucket/silt?region=eu-west-1\nsilt verify                 # inside a cache: its bound bucket (or $SILT_REMOTE)",
	maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		ns, dir := bucketFlags(fs, "also read this namespace's index")
		return func(ctx context.Context, args []string) error {
			ob, err := c.openBucket(ctx, ns, dir, args, 0, 1, false)
			if err != nil {
				return err
			}
			defer ob.Close()
			b := ob.b
			r, err := verify.Run(ctx, ob.root)
			if err != nil {
				return fmt.Errorf("verify %s: %w", ob.url, err)
			}
			problems := r.Problems
			out := map[string]any{"op": "verify", "url": ob.url, "ok": r.Healthy,
				"if_none_match": r.Probe.IfNoneMatch, "if_match": r.Probe.IfMatch, "conditional_delete": r.Probe.ConditionalDelete,
				"race": r.Race, "create_race": r.CreateRace, "latency_ms": r.LatencyMs, "problems": problems,
				"seq": r.Seq, "shards": r.Shards, "entries": r.Entries, "capabilities": b.Capabilities()}
			if err := c.result(out, func() {
				mark := map[bool]string{true: "ok  ", false: "FAIL"}
				c.printf("%s reachable, index readable (seq %d, %s read, %s)\n", mark[true], r.Seq, count(r.Shards, "shard"), count(r.Entries, "file"))
				c.printf("%s If-None-Match (create-if-absent)\n", mark[r.Probe.IfNoneMatch])
				if b.Capabilities().ConditionalPut || r.Probe.IfMatch {
					c.printf("%s If-Match (compare-and-swap)\n", mark[r.Probe.IfMatch])
				} else {
					c.printf("none If-Match (compare-and-swap): not needed by the default format, which commits by create-if-absent\n")
				}
				if cr := r.CreateRace; cr.Writers > 0 {
					c.printf("%s %d writers racing to create one key: %d created in %d rounds\n", mark[cr.OK()], cr.Writers, cr.Won, cr.Rounds)
				}
				if r.Race.Writers > 0 {
					c.printf("%s %d writers racing on one key: %d of %d updates kept\n", mark[r.Race.OK()], r.Race.Writers, r.Race.Got, r.Race.Want)
				}
				if b.Capabilities().ConditionalDelete {
					c.printf("%s conditional delete\n", mark[r.Probe.ConditionalDelete])
				}
				c.printf("mean round trip %v\n", r.Probe.Latency.Round(time.Microsecond))
				for _, p := range problems {
					c.printf("problem: %s\n", p)
				}
			}); err != nil {
				return err
			}
			if len(problems) > 0 {
				return withHint(fmt.Errorf("verify %s: the store does not keep silt's contract: %s", ob.url, problems[0]),
					"use a store with conditional writes (AWS S3, GCS, MinIO, R2), or commit only under a lock")
			}
			return nil
		}
	},
}

var conformanceCmd = &command{
	name:    "conformance",
	args:    "URL",
	summary: "run the backend conformance suite against a live store, on a scratch prefix it removes",
	example: "silt conformance file:///tmp/scratch-bucket\nsilt conformance s3://my-test-bucket?region=eu-west-1\nsilt conformance --model file:///tmp/scratch-bucket",
	minArgs: 1, maxArgs: 1, complete: completeURL,
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		model := fs.Bool("model", false, "run the model-based syncer test (generated sequences; SILT_MODEL_BUDGET=N sequences per mode) through silt-conformance, instead of the backend checks")
		return func(ctx context.Context, pos []string) error {
			if *model {
				return runModelConformance(ctx, c, pos[0])
			}
			b, err := openURL(ctx, pos[0])
			if err != nil {
				return err
			}
			defer b.Close()
			scratch := check.NewScratch(b)
			type result struct {
				Name    string `json:"name"`
				Passed  bool   `json:"passed"`
				Skipped bool   `json:"skipped"`
				Message string `json:"message,omitempty"`
			}
			results := []result{}
			failed := check.RunLive(ctx, scratch.Next, func(name string, passed, skipped bool, msg string) {
				results = append(results, result{name, passed, skipped, msg})
				status := map[bool]string{true: "PASS", false: "FAIL"}[passed]
				if skipped {
					status = "SKIP"
				}
				c.printf("%s %s", status, name)
				if msg != "" && (!passed || skipped) {
					c.printf(": %s", msg)
				}
				c.printf("\n")
			})
			cleanErr := scratch.Remove(ctx)
			_ = c.result(map[string]any{"op": "conformance", "url": pos[0], "checks": results, "failed": failed}, func() {
				c.printf("%s, %d failed\n", count(len(results), "check"), failed)
			})
			if cleanErr != nil {
				return fmt.Errorf("conformance %s: %w", pos[0], cleanErr)
			}
			if failed > 0 {
				return fmt.Errorf("conformance %s: %d of %d checks failed", pos[0], failed, len(results))
			}
			return nil
		}
	},
}
