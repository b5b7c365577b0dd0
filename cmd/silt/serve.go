package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/serve"
	"github.com/siltsync/silt/syncer"
)

var serveCmd = &command{
	name:    "serve",
	args:    "",
	summary: "own a cache directory and serve its operations over a local JSON API (Unix socket DIR/.silt/serve.sock; see serve/API.md)",
	example: "silt serve --dir ./cache\nsilt serve --dir ./cache --listen 127.0.0.1:7420 --token-file ~/.silt-token\nsilt serve --dir ./cache --lazy 'data/**/raw' --lazy '**/*.bin'",
	setup:   setupServe,
}

// Registered here, after main.go's init (files initialise in name order), to
// keep the serve feature in this one file.
func init() { commands = append(commands, serveCmd) }

// serveFlags are serve's flags, once parsed.
type serveFlags struct {
	dir, listen, tokenFile *string
	grace                  *time.Duration
	lazy                   *stringsFlag
}

func setupServe(c *cli, fs *flag.FlagSet) runFunc {
	dir := dirFlag(fs)
	listen := fs.String("listen", "", "also listen on this loopback address (127.0.0.1:PORT); needs --token-file")
	tokenFile := fs.String("token-file", "", "file holding the bearer token TCP clients must send")
	grace := fs.Duration("grace", 30*time.Second, "on SIGINT/SIGTERM, how long running operations may finish before they are cancelled")
	var lazy stringsFlag
	fs.Var(&lazy, "lazy", "files a metadataOnly pull records without downloading (a glob, ** spans directories; repeatable; default 'data/**/raw', as pull --metadata-only)")
	f := serveFlags{dir, listen, tokenFile, grace, &lazy}
	return func(ctx context.Context, _ []string) error { return runServe(ctx, c, f) }
}

func runServe(ctx context.Context, c *cli, f serveFlags) error {
	dir, listen, tokenFile, grace := f.dir, f.listen, f.tokenFile, f.grace
	lazy := *f.lazy
	if len(lazy) == 0 {
		lazy = stringsFlag{"data/**/raw"}
	}
	lazyFn, err := syncer.LazyGlobs(lazy...)
	if err != nil {
		return usagef("--lazy: %v", err)
	}
	token, err := serveToken(*listen, *tokenFile)
	if err != nil {
		return err
	}
	cfg, err := readBinding(*dir)
	if err != nil {
		return err
	}
	if cl, err := serve.Dial(ctx, *dir); err == nil {
		info, _ := cl.Info(ctx)
		return &refusedError{msg: fmt.Sprintf("%s is already served by silt serve (pid %d)", *dir, info.PID),
			hint: "silt commands on this directory already go through that service"}
	}
	b, err := openURL(ctx, cfg.URL)
	if err != nil {
		return err
	}
	defer b.Close()
	srv, err := serve.Open(ctx, serve.Config{Syncer: syncer.Config{Backend: b, Dir: *dir, Namespace: cfg.Namespace, Lazy: lazyFn, Logger: c.logger}, Token: token})
	if err != nil {
		return fmt.Errorf("serve %s: %w", *dir, err)
	}
	lns, err := serveListeners(ctx, *dir, *listen)
	if err != nil {
		return errors.Join(fmt.Errorf("serve %s: %w", *dir, err), srv.Shutdown(context.WithoutCancel(ctx)))
	}
	served := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { served <- srv.Serve(ln) }()
	}
	addrs := make([]string, len(lns))
	for i, ln := range lns {
		addrs[i] = ln.Addr().Network() + ":" + ln.Addr().String()
	}
	if err := c.result(map[string]any{"op": "serve", "dir": *dir, "url": cfg.URL, "pid": os.Getpid(), "listen": addrs, "api": serve.APIVersion}, func() {
		c.printf("serving %s (%s) on %s; stop with Ctrl-C\n", *dir, cfg.URL, strings.Join(addrs, ", "))
	}); err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil // running operations were cancelled, as documented
	}
	return errors.Join(serveErr, err)
}

func serveToken(listen, tokenFile string) (string, error) {
	if listen == "" {
		if tokenFile != "" {
			return "", usagef("--token-file goes with --listen")
		}
		return "", nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", usagef("--listen %s: %v", listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", usagef("--listen %s: only a loopback address (127.0.0.1:PORT) is allowed", listen)
	}
	if tokenFile == "" {
		return "", usagef("--listen needs --token-file: TCP clients must send a bearer token")
	}
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", usagef("--token-file %s is empty", tokenFile)
	}
	return token, nil
}

func serveListeners(ctx context.Context, dir, listen string) ([]net.Listener, error) {
	ln, err := serve.Listen(ctx, dir)
	if err != nil {
		return nil, err
	}
	lns := []net.Listener{ln}
	if listen != "" {
		var lc net.ListenConfig
		tl, err := lc.Listen(ctx, "tcp", listen)
		if err != nil {
			ln.Close()
			return nil, err
		}
		lns = append(lns, tl)
	}
	return lns, nil
}

// engine is what the cache commands call: the Syncer itself, or the
// service that owns the directory.
type engine interface {
	Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error)
	Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error)
	MarkDirty(path string) error
	Status(ctx context.Context, remote bool) (syncer.Status, error)
	HydrateFile(ctx context.Context, path string) (bool, syncer.Stats, error)
	Resolve(ctx context.Context, opts syncer.ResolveOptions) (syncer.Stats, error)
	Root() string
	Close() error
}

// openServed returns the bound cache through the service that owns dir,
// or nil when no service does (the caller then opens the directory itself).
// This is the CLI's one hook into silt serve.
func openServed(ctx context.Context, dir string, cfg binding) (*bound, error) {
	cl, err := serve.Dial(ctx, dir)
	if errors.Is(err, serve.ErrNotServed) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reach the silt serve owning %s: %w", dir, err)
	}
	root := dir
	if cfg.Namespace != "" {
		root = filepath.Join(dir, cfg.Namespace)
	}
	return &bound{dir: dir, cfg: cfg, s: &served{ctx: ctx, c: cl, root: root}}, nil
}

// served adapts the service's client to engine. It keeps the command's
// context for MarkDirty, whose library signature has none.
type served struct {
	ctx  context.Context
	c    *serve.Client
	root string // the cache's data root: DIR, or DIR/NAMESPACE
}

func (s *served) Root() string { return s.root }

func (s *served) Resolve(ctx context.Context, opts syncer.ResolveOptions) (syncer.Stats, error) {
	keep := "" // the service refuses it, as the library does
	switch opts.Keep {
	case syncer.KeepLocal:
		keep = serve.KeepLocal
	case syncer.TakeRemote:
		keep = serve.KeepRemote
	}
	return s.c.Resolve(ctx, serve.ResolveRequest{Paths: opts.Paths, All: opts.All, Keep: keep})
}

func (s *served) Pull(ctx context.Context, opts syncer.PullOptions) (syncer.Stats, error) {
	return s.c.Pull(ctx, serve.PullRequest{Scope: opts.Scope, MetadataOnly: opts.MetadataOnly})
}

func (s *served) Push(ctx context.Context, opts syncer.PushOptions) (syncer.Stats, error) {
	return s.c.Push(ctx, serve.PushRequest{Paths: opts.Paths, All: opts.All, MaxDelete: opts.MaxDelete, DryRun: opts.DryRun, Fence: opts.Fence})
}

func (s *served) MarkDirty(path string) error { return s.c.MarkDirty(s.ctx, path) }

func (s *served) Status(ctx context.Context, remote bool) (syncer.Status, error) {
	return s.c.Status(ctx, remote)
}

func (s *served) HydrateFile(ctx context.Context, path string) (bool, syncer.Stats, error) {
	r, err := s.c.Hydrate(ctx, path)
	if err != nil {
		return false, r.Stats, err
	}
	return len(r.Found) == 1 && r.Found[0], r.Stats, nil
}

func (s *served) Close() error { return s.c.Close() }

var _ engine = (*syncer.Syncer)(nil)
