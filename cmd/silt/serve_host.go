package main

import (
	"context"
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/siltsync/silt/serve"
)

// serveHost holds silt serve's flags for hosts that start a service for
// themselves: its lifetime (tied to the parent, stdin or idleness), the
// remote watch, and the bucket-only mode.
type serveHost struct {
	parentPID *int
	stdinExit *bool
	idleExit  *time.Duration
	watch     *time.Duration
	bucket    *string
	socket    *string
	namespace *string
}

func serveHostFlags(fs *flag.FlagSet) *serveHost {
	return &serveHost{
		parentPID: fs.Int("parent-pid", 0, "exit when the process with this pid exits (a host that started the service passes its own)"),
		stdinExit: fs.Bool("exit-on-stdin-close", false, "exit when stdin closes (a host that started the service with a pipe dies: the pipe closes, even on SIGKILL)"),
		idleExit:  fs.Duration("idle-exit", 0, "exit after this long with no request, job or held lock (0: never)"),
		watch:     fs.Duration("watch-interval", serve.DefaultWatchInterval, "while a client watches the remote (POST /v1/events with remote), read the manifest this often (one conditional request)"),
		bucket:    fs.String("bucket", "", "serve a bucket URL without a cache directory: locks, control plane, health, namespaces, reads (needs --socket)"),
		socket:    fs.String("socket", "", "with --bucket: the Unix socket to listen on (its directory is made private)"),
		namespace: fs.String("namespace", "", "with --bucket: the namespace served"),
	}
}

// lifetime returns a context cancelled when the service should end on its
// own: the parent exited, stdin closed, or it was idle for --idle-exit.
func (h *serveHost) lifetime(ctx context.Context, c *cli, srv *serve.Server) (context.Context, context.CancelFunc) {
	srv.SetWatchInterval(*h.watch)
	ctx, cancel := context.WithCancel(ctx)
	end := func(why string) {
		fmt.Fprintf(c.stderr, "silt serve: %s; shutting down\n", why)
		cancel()
	}
	if pid := *h.parentPID; pid > 0 {
		direct := os.Getppid() == pid
		go func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				// A direct child is re-parented the moment its parent exits,
				// before it is reaped; otherwise ask the kernel.
				if (direct && os.Getppid() != pid) || !processAlive(pid) {
					end(fmt.Sprintf("parent process %d exited", pid))
					return
				}
			}
		}()
	}
	if *h.stdinExit {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			end("stdin closed")
		}()
	}
	if d := *h.idleExit; d > 0 {
		idle := srv.IdleExit(ctx, d)
		go func() {
			select {
			case <-idle:
				end(fmt.Sprintf("idle for %v", d))
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// runServeBucket is silt serve --bucket: a service for a bucket
// (namespace) without a cache directory.
func runServeBucket(ctx context.Context, c *cli, h *serveHost, listen, token string, grace time.Duration) error {
	if *h.socket == "" {
		return usagef("--bucket needs --socket PATH (there is no cache directory to hold the socket)")
	}
	b, err := openURL(ctx, *h.bucket)
	if err != nil {
		return err
	}
	defer b.Close()
	srv, err := serve.OpenBucket(ctx, serve.BucketConfig{Backend: b, Namespace: *h.namespace, Token: token})
	if err != nil {
		return usagef("--namespace: %v", err)
	}
	ln, err := serve.ListenAt(ctx, *h.socket)
	if err != nil {
		return errors.Join(err, srv.Shutdown(context.WithoutCancel(ctx)))
	}
	lns := []net.Listener{ln}
	if listen != "" {
		var lc net.ListenConfig
		tl, err := lc.Listen(ctx, "tcp", listen)
		if err != nil {
			ln.Close()
			return errors.Join(err, srv.Shutdown(context.WithoutCancel(ctx)))
		}
		lns = append(lns, tl)
	}
	served := make(chan error, len(lns))
	addrs := make([]string, len(lns))
	for i, l := range lns {
		go func() { served <- srv.Serve(l) }()
		addrs[i] = l.Addr().Network() + ":" + l.Addr().String()
	}
	if err := c.result(map[string]any{"op": "serve", "mode": serve.ModeBucket, "url": redactURL(*h.bucket), "namespace": *h.namespace,
		"pid": os.Getpid(), "listen": addrs, "api": serve.APIVersion}, func() {
		c.printf("serving bucket %s on %s; stop with Ctrl-C\n", redactURL(*h.bucket), strings.Join(addrs, ", "))
	}); err != nil {
		return err
	}
	lctx, stop := h.lifetime(ctx, c, srv)
	defer stop()
	var serveErr error
	select {
	case <-lctx.Done():
	case serveErr = <-served:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return errors.Join(serveErr, err)
}
