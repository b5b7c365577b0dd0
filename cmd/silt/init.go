package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/gcs"
	"github.com/siltsync/silt/backend/seal"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/crypt"
	"github.com/siltsync/silt/namespace"
	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

// binding is DIR/.silt/config.json: which bucket a cache directory syncs
// with. It lives in silt's own directory, which never syncs.
type binding struct {
	URL       string `json:"url"`
	Namespace string `json:"namespace,omitempty"`
	// Encrypted says the bucket is encrypted, so a command without a
	// passphrase fails before it sends a request.
	Encrypted bool `json:"encrypted,omitempty"`
}

// sameBucket reports whether two bindings name one bucket and namespace.
func (b binding) sameBucket(o binding) bool { return b.URL == o.URL && b.Namespace == o.Namespace }

const configFile = "config.json"

func configPath(dir string) string { return filepath.Join(dir, index.InternalDir, configFile) }

func readBinding(dir string) (binding, error) {
	data, err := os.ReadFile(configPath(dir))
	if errors.Is(err, iofs.ErrNotExist) {
		return binding{}, withHint(fmt.Errorf("%s is not a silt cache (no %s)", dir, configPath(dir)),
			fmt.Sprintf("run inside a cache (or pass --dir, or set %s), or bind this directory first: silt init --dir %s URL", envDir, shellQuote(dirOrDot(dir))))
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
	return openStore(ctx, url, true)
}

// openStore is openURL; strict makes --profile or --gcs-credentials on a
// URL of another scheme a usage error (false for a second store, such as
// export's destination, that the flags are not meant for).
func openStore(ctx context.Context, url string, strict bool) (backend.Backend, error) {
	full, err := withStoreFlags(ctx, url, strict)
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
	sb, err := unlock(ctx, b, url)
	if err != nil {
		b.Close()
		return nil, err
	}
	return logged(ctx, sb), nil
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

// bound is an open cache directory: its binding, bucket and cache (the
// Syncer, or the service owning the directory, behind one interface).
type bound struct {
	dir string
	cfg binding
	b   backend.Backend // the bucket, for locks and status -v; nil if it could not be opened here while a service owns the cache
	s   serve.Cache
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
	if cfg.Encrypted {
		if p, err := passphrase(ctx); err != nil {
			return nil, err
		} else if p == nil {
			return nil, withHint(fmt.Errorf("open cache %s: %w", dir, index.ErrEncrypted),
				fmt.Sprintf("set %s or pass --password-file FILE", crypt.PassphraseEnv))
		}
	}
	b, berr := openURL(ctx, cfg.URL)
	s, err := c.openCache(ctx, dir, cfg, b)
	if berr != nil {
		if _, ok := serve.Served(s); !ok || err != nil {
			// Only a service that holds the store itself can do without it.
			if s != nil {
				s.Close()
			}
			return nil, berr
		}
		b = nil
	}
	if err != nil {
		if b != nil {
			b.Close()
		}
		if errors.Is(err, syncer.ErrBusy) {
			if owner := servedBy(ctx, dir); owner != "" {
				err = fmt.Errorf("%w (held by %s)", err, owner)
			}
		}
		return nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	return &bound{dir: dir, cfg: cfg, b: b, s: s}, nil
}

// dirFlag declares --dir.
func dirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", "", "the cache `DIR`ectory (default: $SILT_DIR, else the nearest directory at or above the working directory bound with silt init)")
}

// absoluteURL makes a relative file:// URL (file://./rel, file://rel)
// absolute against the working directory, so that a binding means the
// same bucket from wherever a later command runs.
func absoluteURL(raw string) (string, error) {
	rest, ok := strings.CutPrefix(raw, "file://")
	if !ok || !(rest == "." || strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, ".?")) {
		return raw, nil
	}
	p, query, _ := strings.Cut(rest, "?")
	abs, err := filepath.Abs(filepath.FromSlash(p))
	if err != nil {
		return "", usagef("%s: %v", raw, err)
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if query != "" {
		u += "?" + query
	}
	return u, nil
}

// namespaceOf applies --namespace to a bucket: the namespace root.
func namespaceOf(b backend.Backend, ns string) (backend.Backend, error) {
	if ns == "" {
		return b, nil
	}
	if err := namespace.Validate(ns); err != nil {
		return nil, usagef("--namespace: %v", err)
	}
	return backend.Prefixed(b, ns), nil
}

var initCmd = &command{
	name: "init",
	args: "URL",
	summary: "bind a local directory to a bucket URL (kept in DIR/.silt/config.json, which never syncs); " +
		"a directory that already holds files needs --push-existing or --adopt",
	example: "silt init --dir ~/models s3://my-bucket/silt?region=eu-west-1\n" +
		"silt init --dir ./cache --namespace team-a file:///srv/bucket\n" +
		"silt init --push-existing s3://my-bucket      # this directory's files become the first commit (or a push)\n" +
		"silt init --adopt s3://my-bucket              # keep these files as the cache's state; the next push sends what differs\n" +
		"silt init --profile work s3://my-bucket       # an AWS shared-config profile (or ?profile=work, or $AWS_PROFILE)\n" +
		"silt init --gcs-credentials key.json gs://my-bucket",
	minArgs: 1, maxArgs: 1,
	setup:    setupInit,
	complete: completeURL,
}

// errNotEmpty is the refusal of init on a directory that holds files,
// when neither --push-existing nor --adopt says what to do with them.
func errNotEmpty(dir string, local, remote int) error {
	return &refusedError{
		msg: fmt.Sprintf("%s already holds %s and the bucket %d; silt init does not guess what to do with them", dir, count(local, "file"), remote),
		hint: "choose one: --push-existing binds and pushes them now (the first commit, or an ordinary push onto the bucket's files, " +
			"where a file that differs is a conflict); --adopt binds and takes them as the cache's state (files equal to the bucket's are in sync, " +
			"a file that differs is kept and wins at the next push, files only here go up with the next push, files only in the bucket are downloaded)",
	}
}

func setupInit(c *cli, fs *flag.FlagSet) runFunc {
	dir := dirFlag(fs)
	ns := fs.String("namespace", "", "sync only this namespace of the bucket")
	force := fs.Bool("force", false, "replace an existing binding to another URL or namespace")
	pushExisting := fs.Bool("push-existing", false, "the directory holds files: bind, then push them at once (the first commit on an empty bucket; "+
		"on one with commits an ordinary push, where a file that differs from the bucket's is a conflict, exit 3)")
	encrypt := fs.Bool("encrypt", false, "encrypt the bucket, which must hold no index yet: every object, name and byte sealed under a new repository key, "+
		"wrapped under the passphrase of --password-file or $SILT_PASSWORD (silt key adds, rotates and removes passphrases); on an encrypted bucket it only checks the passphrase")
	adopt := fs.Bool("adopt", false, "the directory holds files: bind and take them as the cache's state. Files equal to the bucket's are recorded as in sync; "+
		"a file that differs is kept and marked to win at the next push (as silt resolve --keep-local); files only here are pushed by the next push; "+
		"files only in the bucket are downloaded now. Nothing is uploaded until silt push")
	return func(ctx context.Context, pos []string) error {
		return runInit(ctx, c, initFlags{*dir, *ns, *force, *pushExisting, *adopt, *encrypt}, pos[0])
	}
}

// initFlags are init's flags, once parsed.
type initFlags struct {
	dir, ns                             string
	force, pushExisting, adopt, encrypt bool
}

func runInit(ctx context.Context, c *cli, f initFlags, rawURL string) error {
	dir, ns, force, pushExisting, adopt := &f.dir, &f.ns, &f.force, &f.pushExisting, &f.adopt
	given := f.dir != "" // hints repeat --dir when it was given
	if *pushExisting && *adopt {
		return usagef("--push-existing and --adopt exclude each other")
	}
	if *dir == "" {
		// init never searches upward: that would bind the enclosing cache.
		if *dir = os.Getenv(envDir); *dir == "" {
			*dir = "."
		}
	}
	u, err := absoluteURL(rawURL)
	if err != nil {
		return err
	}
	cfg := binding{URL: u, Namespace: *ns}
	if cfg.Namespace != "" {
		if err := namespace.Validate(cfg.Namespace); err != nil {
			return usagef("--namespace: %v", err)
		}
	}
	if outer, ok := enclosingCache(*dir); ok {
		return &refusedError{
			msg:  fmt.Sprintf("%s is inside the silt cache %s", *dir, outer),
			hint: "a cache inside a cache never syncs its own state through the outer one; use a directory outside " + outer,
		}
	}
	old, oldErr := readBinding(*dir)
	if oldErr == nil && !old.sameBucket(cfg) && !*force {
		return &refusedError{
			msg:  fmt.Sprintf("%s is already bound to %s (namespace %q)", *dir, redactURL(old.URL), old.Namespace),
			hint: "binding a synced cache to another bucket mixes their files; use a new directory, or --force",
		}
	}
	rebind := oldErr == nil && old.sameBucket(cfg) // init again: its files are the cache's already
	b, err := openURL(ctx, cfg.URL)
	if err != nil {
		return err
	}
	defer b.Close()
	if f.encrypt {
		if b, err = encryptBucket(ctx, b, cfg.URL); err != nil {
			return err
		}
	}
	cfg.Encrypted = seal.Of(b) != nil
	root, _ := namespaceOf(b, cfg.Namespace)
	snap, err := index.OpenSnapshot(ctx, root)
	if err != nil {
		return fmt.Errorf("read the index of %s: %w", redactURL(cfg.URL), err)
	}
	m := snap.Manifest()
	abs, _ := filepath.Abs(*dir)
	dataRoot := filepath.Join(abs, cfg.Namespace)
	local := countFiles(dataRoot)
	mode := "bind"
	switch {
	case local == 0 || rebind:
	case *pushExisting:
		mode = "push-existing"
	case *adopt:
		mode = "adopt"
	default:
		return errNotEmpty(*dir, local, m.Entries())
	}
	if owner := servedBy(ctx, *dir); owner != "" {
		return &refusedError{msg: fmt.Sprintf("%s is in use by %s", *dir, owner),
			hint: "stop it (or let it finish), then run silt init again"}
	}
	s, err := syncer.Open(ctx, syncer.Config{Backend: b, Dir: *dir, Namespace: cfg.Namespace})
	if err != nil {
		if owner := servedBy(ctx, *dir); owner != "" && errors.Is(err, syncer.ErrBusy) {
			err = fmt.Errorf("%w (held by %s)", err, owner)
		}
		return fmt.Errorf("open cache %s: %w", *dir, err)
	}
	s.Close()
	var data bytes.Buffer
	if err := writeJSON(&data, cfg); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if redactURL(cfg.URL) != cfg.URL {
		perm = 0o600 // the URL carries a secret (s3://KEY:SECRET@bucket)
	}
	if err := os.WriteFile(configPath(*dir), data.Bytes(), perm); err != nil {
		return err
	}
	stray := strayEntries(abs, cfg.Namespace)
	out := map[string]any{"op": "init", "dir": abs, "url": redactURL(cfg.URL), "namespace": cfg.Namespace,
		"seq": m.Seq, "entries": m.Entries(), "local_files": local, "mode": mode}
	if len(stray) > 0 {
		out["ignored"] = stray
	}
	var st syncer.Stats
	var next string
	switch mode {
	case "bind":
		next = nextStep(*dir, dirOpt(given, *dir), local, m.Entries())
	case "push-existing":
		if st, err = initPush(ctx, c, *dir); err != nil {
			c.partial(st)
			return err
		}
		out["push"] = st
		next = "silt status" + dirOpt(given, *dir)
		if m.Entries() > 0 {
			next = "silt pull" + dirOpt(given, *dir) + " (fetches the bucket's files this directory lacks)"
		}
	case "adopt":
		if st, err = initAdopt(ctx, c, *dir); err != nil {
			c.partial(st)
			return err
		}
		out["adopt"] = st
		next = "silt push" + dirOpt(given, *dir) + " (sends the files only here and the kept differing ones)"
	}
	out["next"] = next
	return c.result(out, func() {
		c.printf("bound %s to %s", abs, redactURL(cfg.URL))
		if cfg.Namespace != "" {
			c.printf(" (namespace %s)", cfg.Namespace)
		}
		c.printf("; the bucket holds %s at seq %d, the directory %d.\n", count(m.Entries(), "file"), m.Seq, local)
		switch mode {
		case "push-existing":
			c.printf("pushed the %s already there: %s; now at seq %d\n", count(local, "file"), fileCounts(st, false), st.Seq)
		case "adopt":
			c.printf("adopted the %s already there: %d equal to the bucket's (in sync), %d differing (kept; they win at the next push), %d only here (sent by the next push); downloaded %d only in the bucket\n",
				count(local, "file"), st.Files.Unchanged, st.Files.Conflicts, max(0, local-st.Files.Unchanged-st.Files.Conflicts), st.Files.Downloaded)
		}
		c.printf("Next: %s\n", next)
		if len(stray) > 0 {
			c.printf("note: with --namespace %s only files under %s sync; %s %s ignored (move them under %s/)\n",
				cfg.Namespace, dataRoot, strings.Join(stray, ", "), map[bool]string{true: "is", false: "are"}[len(stray) == 1], dataRoot)
		}
	})
}

// initPush is init --push-existing once bound: an ordinary push of the
// whole directory, whose conflicts are listed and make exit code 3.
func initPush(ctx context.Context, c *cli, dir string) (syncer.Stats, error) {
	bd, err := c.openBound(ctx, dir)
	if err != nil {
		return syncer.Stats{}, err
	}
	defer bd.Close()
	md, _ := maxDelete(100)
	st, err := push(ctx, bd, nil, syncer.PushOptions{MaxDelete: md})
	if err != nil {
		return st, err
	}
	if err := c.conflicted(st, dir); err != nil {
		c.printStats(st)
		re := err.(*refusedError)
		re.msg = fmt.Sprintf("bound %s and pushed the files already there, but %s", dir, re.msg)
		return st, re
	}
	return st, nil
}

// initAdopt is init --adopt once bound: a pull records the files equal to
// the bucket's and downloads the bucket's others; each file that differs
// (a pull conflict) is then settled KeepLocal, so the next push sends it.
func initAdopt(ctx context.Context, c *cli, dir string) (syncer.Stats, error) {
	bd, err := c.openBound(ctx, dir)
	if err != nil {
		return syncer.Stats{}, err
	}
	defer bd.Close()
	st, err := bd.s.Pull(ctx, syncer.PullOptions{})
	if err != nil {
		return st, fmt.Errorf("init --adopt: pull %s from %s: %w", bd.dir, redactURL(bd.cfg.URL), err)
	}
	if st.Files.Conflicts > 0 {
		if _, err := bd.s.Resolve(ctx, syncer.ResolveOptions{All: true, Keep: syncer.KeepLocal}); err != nil {
			return st, fmt.Errorf("init --adopt: keep the local copies that differ: %w", err)
		}
	}
	return st, nil
}

// nextStep is init's advice for a directory with nothing to sync yet; d
// is the --dir the commands need (dirOpt).
func nextStep(dir, d string, local, remote int) string {
	switch {
	case local == 0 && remote == 0:
		return fmt.Sprintf("put files in %s, then silt push%s", dir, d)
	case local == 0:
		return "silt pull" + d
	}
	return fmt.Sprintf("silt status%s, then silt push%s", d, d)
}

// countFiles counts the regular files under root, outside silt's own
// directories; an unreadable part counts as nothing (the count is advice).
func countFiles(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == index.InternalDir:
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
		if e.Name() != index.InternalDir && e.Name() != ns {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// encryptBucket is init --encrypt: b, unlocked when it is encrypted
// already, else encrypted now under a new repository key.
func encryptBucket(ctx context.Context, b backend.Backend, url string) (backend.Backend, error) {
	if seal.Of(b) != nil {
		return b, nil
	}
	p, err := passphrase(ctx)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, usagef("--encrypt needs a passphrase: set %s or pass --password-file FILE", crypt.PassphraseEnv)
	}
	sb, kf, err := seal.Init(ctx, b, p, crypt.DefaultKDFParams, keyLabel())
	if errors.Is(err, seal.ErrNotEmpty) {
		return nil, &refusedError{msg: fmt.Sprintf("%s holds a plain index: %v", redactURL(url), err),
			hint: "a bucket is encrypted from its first object on; init --encrypt an empty bucket or prefix and push the caches into it"}
	}
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", redactURL(url), err)
	}
	if c, _ := ctx.Value(cliKey{}).(*cli); c != nil && !c.json {
		fmt.Fprintf(c.stderr, "encrypted %s: key file %s; keep the passphrase safe: without it nobody reads the bucket again\n", redactURL(url), kf.ID)
	}
	return sb, nil
}

// keyLabel is the label of a key file this command writes: user@host.
func keyLabel() string {
	h, _ := os.Hostname()
	u := os.Getenv("USER")
	if u == "" {
		u = "silt"
	}
	return u + "@" + h
}
