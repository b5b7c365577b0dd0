package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

var demoCmd = &command{
	name: "demo",
	args: "",
	summary: "two caches (\"two machines\") and a file:// bucket in a temporary directory: push, scoped and full pull, " +
		"a deletion arriving; prints each step's statistics",
	example: "silt demo\nsilt demo --dir /tmp/silt-demo --json",
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		dir := fs.String("dir", "", "where to create the bucket and the two caches (default: a temporary directory, removed afterwards)")
		return func(ctx context.Context, _ []string) error { return runDemo(ctx, c, *dir) }
	},
}

// demoModels have ids of 2, 3 and 4 path segments, as hosts name them.
var demoModels = []string{"acme/tiny", "acme/vision/resnet", "acme/nlp/en/bert"}

// demoStep is one step of the demo, as --json reports it.
type demoStep struct {
	Step    string       `json:"step"`
	Machine string       `json:"machine"`
	Stats   syncer.Stats `json:"stats"`
}

// demo is the demo's state: one bucket, two machines.
type demo struct {
	c     *cli
	root  string
	url   string
	b     backend.Backend
	a, bm *syncer.Syncer
	steps []demoStep
}

func runDemo(ctx context.Context, c *cli, dirFlag string) (err error) {
	dir := &dirFlag
	root := *dir
	if root == "" {
		if root, err = os.MkdirTemp("", "silt-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	d := &demo{c: c, root: root, url: (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(root, "bucket"))}).String()}
	if d.b, err = openURL(ctx, d.url); err != nil {
		return err
	}
	defer d.b.Close()
	open := func(name string) (*syncer.Syncer, error) {
		// Small shards, so that a scoped pull visibly reads only some.
		return syncer.Open(ctx, syncer.Config{Backend: d.b, Dir: filepath.Join(root, name), ShardMaxEntries: 4})
	}
	if d.a, err = open("machine-a"); err != nil {
		return err
	}
	defer d.a.Close()
	if d.bm, err = open("machine-b"); err != nil {
		return err
	}
	defer d.bm.Close()
	c.printf("silt demo: bucket %s, caches machine-a and machine-b in %s\n\n", d.url, root)
	if err := d.run(ctx); err != nil {
		return fmt.Errorf("demo in %s: %w", root, err)
	}
	if c.json {
		return c.printJSON(map[string]any{"op": "demo", "dir": root, "url": d.url, "steps": d.steps, "ok": true})
	}
	u := d.url
	if *dir == "" {
		// The demo's bucket is removed on return: point at one that lasts.
		u = "file:///tmp/silt-bucket"
		c.printf("\nThe demo's bucket and caches were temporary and are removed now (keep them with --dir).")
	}
	u = shellQuote(u)
	c.printf("\nThe same with the command line:\n  silt init --dir ./a %s\n  mkdir -p a/data/acme/nlp/en/bert && echo 'a model card' > a/data/acme/nlp/en/bert/README\n"+
		"  silt push --dir ./a -v\n  silt init --dir ./b %s\n  silt pull --dir ./b --scope data/acme/nlp/en/bert -v\n", u, u)
	return nil
}

func (d *demo) run(ctx context.Context) error {
	n := 0
	for _, m := range demoModels {
		for _, f := range []struct{ path, body string }{
			{"config.json", fmt.Sprintf(`{"model": %q}`, m)},
			{"state/1/raw", fmt.Sprintf("weights of %s, version 1", m)},
			{"state/2/raw", fmt.Sprintf("weights of %s, version 2", m)},
			{"state/latest", "2"},
		} {
			if err := d.write("machine-a", "data/"+m+"/"+f.path, f.body); err != nil {
				return err
			}
			n++
		}
	}
	d.c.printf("machine-a wrote %s under data/ for models %v\n", count(n, "file"), demoModels)
	if err := d.step(ctx, "push everything", "a", func() (syncer.Stats, error) {
		return d.a.Push(ctx, syncer.PushOptions{All: true})
	}); err != nil {
		return err
	}
	scope := "data/" + demoModels[2]
	if err := d.step(ctx, "scoped pull of "+scope, "b", func() (syncer.Stats, error) {
		return d.bm.Pull(ctx, syncer.PullOptions{Scope: []string{scope}})
	}); err != nil {
		return err
	}
	if err := d.step(ctx, "pull everything else", "b", func() (syncer.Stats, error) {
		return d.bm.Pull(ctx, syncer.PullOptions{})
	}); err != nil {
		return err
	}
	gone := "data/" + demoModels[0]
	if err := os.RemoveAll(filepath.Join(d.root, "machine-a", filepath.FromSlash(gone))); err != nil {
		return err
	}
	d.c.printf("\nmachine-a deleted %s/\n", gone)
	if err := d.step(ctx, "push the deletion", "a", func() (syncer.Stats, error) {
		return d.a.Push(ctx, syncer.PushOptions{All: true, MaxDelete: 100})
	}); err != nil {
		return err
	}
	if err := d.step(ctx, "pull the deletion", "b", func() (syncer.Stats, error) {
		return d.bm.Pull(ctx, syncer.PullOptions{})
	}); err != nil {
		return err
	}
	_, err := os.Stat(filepath.Join(d.root, "machine-b", filepath.FromSlash(gone)))
	if !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%s is still on machine-b after the pull (%v)", gone, err)
	}
	d.c.printf("  %s/ is gone from machine-b too\n", gone)
	snap, err := index.OpenSnapshot(ctx, d.b)
	if err != nil {
		return err
	}
	if _, err := snap.Check(ctx, true); err != nil {
		return fmt.Errorf("index check: %w", err)
	}
	m := snap.Manifest()
	d.c.printf("\nindex at seq %d: %s in %s, every shard and object checked\n", m.Seq, count(m.Entries(), "file"), count(len(m.Shards), "shard"))
	return nil
}

func (d *demo) write(machine, p, body string) error {
	abs := filepath.Join(d.root, machine, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	return os.WriteFile(abs, []byte(body), 0o644)
}

func (d *demo) step(ctx context.Context, what, machine string, fn func() (syncer.Stats, error)) error {
	st, err := fn()
	if err != nil {
		return fmt.Errorf("%s on machine-%s: %w", what, machine, err)
	}
	if st.Files.Conflicts > 0 {
		return fmt.Errorf("%s on machine-%s: unexpected conflicts %v", what, machine, st.Conflicts)
	}
	d.steps = append(d.steps, demoStep{Step: what, Machine: machine, Stats: st})
	d.c.printf("\n[%d] machine-%s: %s\n    %s\n", len(d.steps), machine, what, statsLine(st))
	return ctx.Err()
}
