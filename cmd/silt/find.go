package main

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Environment variables that stand in for flags and arguments, as
// RESTIC_REPOSITORY does for restic.
const (
	envDir    = "SILT_DIR"    // the cache directory, when --dir is not given
	envRemote = "SILT_REMOTE" // the bucket URL, when a command's URL is not given
)

// findDir returns the cache directory a command works on: --dir when
// given, else $SILT_DIR, else (like git) the nearest directory at or above
// the working directory that holds a binding, else ".". It remembers when
// it searched, so paths on the command line can be taken relative to the
// working directory (see cachePaths).
func (c *cli) findDir(dir string) string {
	if dir != "" {
		c.dirGiven = true
		return dir
	}
	if d := os.Getenv(envDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(configPath(d)); err == nil {
			c.cwd = wd
			return d
		}
		if d == filepath.Dir(d) {
			return "."
		}
	}
}

// cachePaths turns paths given on the command line into cache paths: when
// the cache was found above the working directory, a relative path is
// relative to the working directory, as in git; an absolute path inside
// the cache is taken from anywhere. root is the data root (Syncer.Root).
// A path outside the cache is a usage error, wherever it is given from.
func (c *cli) cachePaths(root string, ps []string) ([]string, error) {
	base := "" // the working directory inside the data root, if below it
	if c.cwd != "" {
		if rel, err := filepath.Rel(root, c.cwd); err == nil && rel != "." && !escapes(filepath.ToSlash(rel)) {
			base = filepath.ToSlash(rel)
		}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		q := p
		switch {
		case filepath.IsAbs(p):
			rel, ok := within(root, p)
			if !ok {
				return nil, usagef("%s is outside the cache %s", p, root)
			}
			q = rel
		case base != "" && (p == "." || p == ""):
			q = base
		case base != "":
			q = path.Join(base, filepath.ToSlash(p))
		}
		if escapes(path.Clean(filepath.ToSlash(q))) {
			return nil, usagef("%s is outside the cache %s", p, root)
		}
		out[i] = q
	}
	return out, nil
}

// escapes tells whether a cleaned slash path climbs out of its root.
func escapes(p string) bool { return p == ".." || strings.HasPrefix(p, "../") }

// within returns the slash path of the absolute path p inside the
// directory root ("." for root itself), if it is inside; symbolic links
// in either are resolved when the plain comparison says no.
func within(root, p string) (string, bool) {
	rel := func(root, p string) (string, bool) {
		absRoot, err := filepath.Abs(root)
		if err != nil {
			return "", false
		}
		r, err := filepath.Rel(absRoot, filepath.Clean(p))
		if err != nil || escapes(filepath.ToSlash(r)) {
			return "", false
		}
		return filepath.ToSlash(r), true
	}
	if r, ok := rel(root, p); ok {
		return r, true
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realP, err2 := filepath.EvalSymlinks(filepath.Dir(p))
	if err1 != nil || err2 != nil {
		return "", false
	}
	return rel(realRoot, filepath.Join(realP, filepath.Base(p)))
}

// isURL tells a bucket URL from a path argument.
func isURL(s string) bool { return strings.Contains(s, "://") }

// withRemote returns pos with a bucket URL first, for commands whose URL
// may be left out. rest is how many arguments follow the URL at least, full
// how many at most. The URL is pos[0] when it is one (or when all full
// arguments are there), else $SILT_REMOTE, else the URL the cache found by
// findDir(dir) is bound to (whose namespace applies unless --namespace is
// given); then fromCache is that cache's data root.
func (c *cli) withRemote(pos []string, rest, full int, ns *string, dir string) (_ []string, fromCache string, _ error) {
	if dir == "" && (len(pos) == full || (len(pos) > rest && isURL(pos[0]))) {
		return pos, "", nil
	}
	if u := os.Getenv(envRemote); u != "" && dir == "" {
		return append([]string{u}, pos...), "", nil
	}
	if dir != "" && len(pos) > 0 && isURL(pos[0]) {
		return nil, "", usagef("give a URL or --dir, not both")
	}
	if dir != "" && len(pos) >= full && full >= 0 {
		return nil, "", usagef("too many arguments with --dir: %s", strings.Join(pos, " "))
	}
	d := c.findDir(dir)
	if _, err := os.Stat(configPath(d)); err != nil {
		if dir != "" {
			return nil, "", err
		}
		return nil, "", usagef("missing URL: give one, set %s, or run inside a cache bound with silt init (or set %s, or pass --dir)", envRemote, envDir)
	}
	cfg, err := readBinding(d)
	if err != nil {
		return nil, "", err
	}
	if *ns == "" {
		*ns = cfg.Namespace
	}
	root := d
	if cfg.Namespace != "" {
		root = filepath.Join(d, cfg.Namespace)
	}
	return append([]string{cfg.URL}, pos...), root, nil
}
