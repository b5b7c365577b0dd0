package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/backend"

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
	host                   *serveHost // serve_host.go
}

func setupServe(c *cli, fs *flag.FlagSet) runFunc {
	dir := dirFlag(fs)
	listen := fs.String("listen", "", "also listen on this loopback address (127.0.0.1:PORT); needs --token-file")
	tokenFile := fs.String("token-file", "", "file holding the bearer token TCP clients must send")
	grace := fs.Duration("grace", 30*time.Second, "on SIGINT/SIGTERM, how long running operations may finish before they are cancelled")
	var lazy stringsFlag
	host := serveHostFlags(fs) // serve_host.go
	fs.Var(&lazy, "lazy", "files a metadataOnly pull records without downloading (a glob, ** spans directories; repeatable; default 'data/**/raw', as pull --metadata-only)")
	f := serveFlags{dir, listen, tokenFile, grace, &lazy, host}
	return func(ctx context.Context, _ []string) error { return runServe(ctx, c, f) }
}

func runServe(ctx context.Context, c *cli, f serveFlags) error {
	dir, listen, tokenFile, grace, host := f.dir, f.listen, f.tokenFile, f.grace, f.host
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
	if *host.bucket != "" {
		return runServeBucket(ctx, c, host, *listen, token, *grace)
	}
	*dir = c.findDir(*dir) // as every other command: $SILT_DIR, else upward
	cfg, err := readBinding(*dir)
	if err != nil {
		return err
	}
	if owner := servedBy(ctx, *dir); owner != "" {
		return &refusedError{msg: fmt.Sprintf("%s is already served by %s", *dir, owner),
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
	lctx, stopLife := host.lifetime(ctx, c, srv)
	defer stopLife()
	var serveErr error
	select {
	case <-lctx.Done():
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
	token, err := serve.ReadTokenFile(tokenFile)
	if errors.Is(err, serve.ErrWeakToken) {
		return "", usagef("--token-file: %v", err)
	}
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
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

// openCache opens the bound cache dir through the one library call that
// reaches a cache in-process or through the service owning it. Opened
// in-process, the cache is served while the command runs, so another silt
// command on the directory goes through this one (and runs at once when
// their scopes are disjoint). Per-file lines, the progress line and the
// --json changes reach this command either way (serve.OpenOptions.Observer).
func (c *cli) openCache(ctx context.Context, dir string, cfg binding, b backend.Backend) (serve.Cache, error) {
	owner := "silt"
	if c.cmd != nil {
		owner += " " + c.cmd.name
	}
	// The lazy files of a metadata-only pull another process sends without
	// globs: those of silt serve's default, as if it owned the cache.
	lazy := c.lazy
	if lazy == nil {
		lazy = serve.DefaultLazy
	}
	return c.openWaiting(ctx, dir, func(wait time.Duration) (serve.Cache, error) {
		return serve.OpenCache(ctx, syncer.Config{Backend: b, Dir: dir, Namespace: cfg.Namespace, Logger: c.logger, Lazy: lazy, Tracer: c.tracer(), BusyWait: wait},
			serve.OpenOptions{Serve: true, Owner: owner, Observer: syncer.Observer{OnChange: c.onChange(), Progress: c.progress(), ProgressChecks: true, MaxChanges: c.maxChanges()}})
	})
}

// servedBy names the process whose service owns dir, or "" when none
// answers: what a refusal says instead of "another silt process".
func servedBy(ctx context.Context, dir string) string {
	cl, err := serve.Dial(ctx, dir)
	if err != nil {
		return ""
	}
	defer cl.Close()
	info := cl.Served()
	return fmt.Sprintf("%s (pid %d)", info.Owner, info.PID)
}
