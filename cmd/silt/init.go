package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// binding is DIR/.silt/config.json: which bucket a cache directory syncs
// with. It lives in silt's own directory, which never syncs.
type binding struct {
	URL       string `json:"url"`
	Namespace string `json:"namespace,omitempty"`
}

const configFile = "config.json"

func configPath(dir string) string { return filepath.Join(dir, syncer.InternalDir, configFile) }

func readBinding(dir string) (binding, error) {
	data, err := os.ReadFile(configPath(dir))
	if errors.Is(err, iofs.ErrNotExist) {
		return binding{}, withHint(fmt.Errorf("%s is not a silt cache (no %s)", dir, configPath(dir)),
			fmt.Sprintf("run inside a cache (or pass --dir, or set %s), or bind this directory first: silt init --dir %s URL", envDir, dir))
	}
	if err != nil {
		return binding{}, err
	}
	var b binding
	if err := json.Unmarshal(data, &b); err != nil || b.URL == "" {
		return binding{}, withHint(fmt.Errorf("%s: not a valid binding (%v)", configPath(dir), err),
			"re-create it with: silt init --force --dir DIR URL")
	}
	return b, nil
}

// enclosingCache returns the nearest directory strictly above dir that is
// a bound silt cache.
func enclosingCache(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		if _, err := os.Stat(configPath(d)); err == nil {
			return d, true
		}
		if d == filepath.Dir(d) {
			return "", false
		}
	}
}

// openURL opens a bucket URL, with a hint when it fails.
func openURL(ctx context.Context, url string) (backend.Backend, error) {
	full, err := withStoreFlags(ctx, url)
	if err != nil {
		return nil, err
	}
	b, err := backend.Open(ctx, full, openOptions(ctx)...)
	if err != nil {
		var ce *gcs.CredentialsFileError
		if errors.As(err, &ce) {
			return nil, withHint(fmt.Errorf("open %s: %w", redactURL(url), err),
				"point --gcs-credentials, the URL's ?credentials= or GOOGLE_APPLICATION_CREDENTIALS at a credentials JSON file, or unset them for application default credentials")
		}
		if errors.Is(err, backend.ErrCredentials) {
			return nil, withHint(fmt.Errorf("open %s: %w", redactURL(url), err),
				"check --profile, the URL's ?profile= or AWS_PROFILE against the profiles in your shared AWS files")
		}
		return nil, withHint(fmt.Errorf("open %s: %w", redactURL(url), err),
			"check the URL; stores this silt knows: "+joinSchemes()+" (file:///abs/dir, s3://bucket/prefix, gs://bucket)")
	}
	return logged(ctx, b), nil
}

func joinSchemes() string {
	out := ""
	for i, s := range schemes() {
		if i > 0 {
			out += ", "
		}
		out += s + "://"
	}
	return out
}

func backendSchemes() []string { return backend.Schemes() }

// bound is an open cache directory: its binding, bucket and syncer.
type bound struct {
	dir string
	cfg binding
	b   backend.Backend // nil when a service owns the directory
	s   engine
}

func (bd *bound) Close() {
	bd.s.Close()
	if bd.b != nil {
		bd.b.Close()
	}
}

// openBound opens the cache directory dir through its binding, with a
// progress bar when stderr is a terminal.
func (c *cli) openBound(ctx context.Context, dir string) (*bound, error) {
	dir = c.findDir(dir)
	cfg, err := readBinding(dir)
	if err != nil {
		return nil, err
	}
	if bd, err := openServed(ctx, dir, cfg); bd != nil || err != nil {
		return bd, err
	}
	b, err := openURL(ctx, cfg.URL)
	if err != nil {
		return nil, err
	}
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: dir, Namespace: cfg.Namespace, Progress: c.progress(), ProgressChecks: true,
		OnChange: c.onChange(), MaxChanges: c.maxChanges(), Logger: c.logger, Lazy: c.lazy})
	if errors.Is(err, syncer.ErrBusy) {
		// A silt serve that started while we waited owns it now.
		if bd, serr := openServed(ctx, dir, cfg); bd != nil && serr == nil {
			b.Close()
			return bd, nil
		}
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	return &bound{dir: dir, cfg: cfg, b: b, s: s}, nil
}

// dirFlag declares --dir.
func dirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", "", "the cache directory (default: $SILT_DIR, else the nearest directory at or above the working directory bound with silt init)")
}

// namespaceOf applies --namespace to a bucket: the namespace root.
func namespaceOf(b backend.Backend, ns string) (backend.Backend, error) {
	if ns == "" {
		return b, nil
	}
	if err := syncer.ValidateNamespace(ns); err != nil {
		return nil, usagef("--namespace: %v", err)
	}
	return backend.Prefixed(b, ns), nil
}

var initCmd = &command{
	name:    "init",
	args:    "URL",
	summary: "bind a local directory to a bucket URL (kept in DIR/.silt/config.json, which never syncs)",
	example: "silt init --dir ~/models s3://my-bucket/silt?region=eu-west-1\nsilt init --dir ./cache --namespace team-a file:///srv/bucket",
	run:     runInit,
}

func runInit(ctx context.Context, c *cli, args []string) error {
	fs := c.newFlags()
	dir := dirFlag(fs)
	ns := fs.String("namespace", "", "sync only this namespace of the bucket")
	force := fs.Bool("force", false, "replace an existing binding to another URL or namespace")
	pos, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *dir == "" {
		// init never searches upward: that would bind the enclosing cache.
		if *dir = os.Getenv(envDir); *dir == "" {
			*dir = "."
		}
	}
	cfg := binding{URL: pos[0], Namespace: *ns}
	if cfg.Namespace != "" {
		if err := syncer.ValidateNamespace(cfg.Namespace); err != nil {
			return usagef("--namespace: %v", err)
		}
	}
	if outer, ok := enclosingCache(*dir); ok {
		return &refusedError{
			msg:  fmt.Sprintf("%s is inside the silt cache %s", *dir, outer),
			hint: "a cache inside a cache never syncs its own state through the outer one; use a directory outside " + outer,
		}
	}
	if old, err := readBinding(*dir); err == nil && old != cfg && !*force {
		return &refusedError{
			msg:  fmt.Sprintf("%s is already bound to %s (namespace %q)", *dir, old.URL, old.Namespace),
			hint: "binding a synced cache to another bucket mixes their files; use a new directory, or --force",
		}
	}
	b, err := openURL(ctx, cfg.URL)
	if err != nil {
		return err
	}
	defer b.Close()
	root, _ := namespaceOf(b, cfg.Namespace)
	snap, err := index.OpenSnapshot(ctx, root)
	if err != nil {
		return fmt.Errorf("read the index of %s: %w", cfg.URL, err)
	}
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: *dir, Namespace: cfg.Namespace})
	if err != nil {
		return fmt.Errorf("open cache %s: %w", *dir, err)
	}
	s.Close()
	var data bytes.Buffer
	if err := writeJSON(&data, cfg); err != nil {
		return err
	}
	if err := os.WriteFile(configPath(*dir), data.Bytes(), 0o644); err != nil {
		return err
	}
	abs, _ := filepath.Abs(*dir)
	m := snap.Manifest()
	dataRoot := filepath.Join(abs, cfg.Namespace)
	local := countFiles(dataRoot)
	stray := strayEntries(abs, cfg.Namespace)
	next := nextStep(*dir, local, m.Entries())
	out := map[string]any{"op": "init", "dir": abs, "url": cfg.URL, "namespace": cfg.Namespace,
		"seq": m.Seq, "entries": m.Entries(), "local_files": local, "next": next}
	if len(stray) > 0 {
		out["ignored"] = stray
	}
	return c.result(out, func() {
		c.printf("bound %s to %s", abs, cfg.URL)
		if cfg.Namespace != "" {
			c.printf(" (namespace %s)", cfg.Namespace)
		}
		c.printf("; the bucket holds %d files at seq %d, the directory %d.\nNext: %s\n", m.Entries(), m.Seq, local, next)
		if len(stray) > 0 {
			c.printf("note: with --namespace %s only files under %s sync; %s %s ignored (move them under %s/)\n",
				cfg.Namespace, dataRoot, strings.Join(stray, ", "), map[bool]string{true: "is", false: "are"}[len(stray) == 1], dataRoot)
		}
	})
}

// nextStep is init's advice, from what the directory and the bucket hold.
func nextStep(dir string, local, remote int) string {
	switch {
	case local == 0 && remote == 0:
		return fmt.Sprintf("put files in %s, then silt push --dir %s", dir, dir)
	case local == 0:
		return "silt pull --dir " + dir
	case remote == 0:
		return fmt.Sprintf("silt push --dir %s (uploads the %d files already there)", dir, local)
	}
	return fmt.Sprintf("silt pull --dir %s (files that differ from the bucket's stay as they are and are listed as conflicts), then silt push --dir %s", dir, dir)
}

// countFiles counts the regular files under root, outside silt's own
// directories; an unreadable part counts as nothing (the count is advice).
func countFiles(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == syncer.InternalDir:
			return filepath.SkipDir
		case d.Type().IsRegular():
			n++
		}
		return nil
	})
	return n
}

// strayEntries lists what lies in dir outside the namespace's directory,
// which a cache with a namespace never syncs.
func strayEntries(dir, ns string) []string {
	if ns == "" {
		return nil
	}
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.Name() != syncer.InternalDir && e.Name() != ns {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
