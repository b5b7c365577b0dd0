package main

import (
	"context"
	"fmt"
	"github.com/siltsync/silt/index"
	"os"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/lock"
)

// lockPrefix is where the command line keeps lock objects, relative to the
// namespace root: inside silt's own directory, which never syncs and which
// gc never collects.
const lockPrefix = index.LocksPrefix

var lockCmd = &command{
	name:    "lock",
	args:    "acquire|release|inspect|force-release KEY",
	summary: "take, inspect and free a distributed lock in the bucket (object .silt/locks/KEY); other commands ignore it unless told to use it (silt push --lock KEY)",
	example: "silt lock acquire --dir ./cache --ttl 30m deploy     # prints the nonce and fencing token\n" +
		"silt lock release --dir ./cache --nonce 3f9c... deploy\n" +
		"silt lock inspect --url s3://my-bucket deploy\n" +
		"silt lock force-release --url s3://my-bucket deploy    # break a dead holder's lock\n" +
		"silt push --lock deploy    # a push honours the lock only when told to; on the cache that acquired it, under that lease",
	minArgs: 2, maxArgs: 2,
	setup: setupLock,
	complete: func(args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return []string{"acquire", "release", "inspect", "force-release"}, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	},
}

// lockFlags are lock's flags, once parsed.
type lockFlags struct {
	dir, url, ns, nonce, holder *string
	ttl, wait                   *time.Duration
}

func setupLock(c *cli, fs *flag.FlagSet) runFunc {
	dir := dirFlag(fs)
	url := fs.String("url", "", "the bucket URL (default: the one --dir is bound to)")
	ns := fs.String("namespace", "", "with --url: the namespace whose lock to use")
	ttl := fs.Duration("ttl", 15*time.Minute, "acquire: how long the lock outlives this command (it cannot heartbeat after exiting); release it when done")
	wait := fs.Duration("wait", 0, "acquire: how long to wait for a holder (0: try once)")
	nonce := fs.String("nonce", "", "release: the nonce acquire printed (default: the lease silt lock acquire took on this cache); force-release: free only this holder")
	holder := fs.String("holder", "", "acquire: the holder name shown to others (default user@host)")
	f := lockFlags{dir, url, ns, nonce, holder, ttl, wait}
	return func(ctx context.Context, pos []string) error { return runLock(ctx, c, f, pos) }
}

func runLock(ctx context.Context, c *cli, f lockFlags, pos []string) error {
	dir, url, ns, nonce, ttl, wait, holder := f.dir, f.url, f.ns, f.nonce, f.ttl, f.wait, f.holder
	action, key := pos[0], pos[1]
	if err := backend.ValidateKey(key); err != nil {
		return usagef("lock key: %v", err)
	}
	switch action {
	case "acquire", "inspect", "force-release":
	case "release":
		if *nonce == "" && !hasHeld(*dir, *url, key) {
			return usagef("release needs --nonce (printed by acquire): this process does not hold the lease, and the cache recorded none")
		}
	default:
		return usagef("unknown lock action %q: want acquire, release, inspect or force-release", action)
	}
	b, root, cache, cfg, err := lockRoot(ctx, *dir, *url, *ns)
	if err != nil {
		return err
	}
	defer b.Close()
	where := " --url " + shellQuote(redactURL(*url)) // the lock's bucket, for hints
	if *ns != "" {
		where += " --namespace " + shellQuote(*ns)
	}
	switch {
	case cache != "":
		where = dirOpt(*dir != "", cache)
	case *url == "":
		where = "" // $SILT_REMOTE names it
	}
	if h, ok := readHeld(cache, cfg, key); action == "release" && *nonce == "" && cache != "" && ok {
		*nonce = h.Nonce // the lease this cache's silt lock acquire took
	}
	maxWait := *wait
	if maxWait <= 0 {
		maxWait = -1 // lock: try once
	}
	l, err := lock.New(root, lockPrefix+key, lock.Options{TTL: *ttl, MaxWait: maxWait, Holder: *holder})
	if err != nil {
		return err
	}
	out := map[string]any{"op": "lock", "action": action, "key": key, "object": lockPrefix + key}
	switch action {
	case "acquire":
		lease, err := l.Acquire(ctx)
		if err != nil {
			return lockHeldError("lock acquire "+key, "--wait", err)
		}
		if cache != "" {
			// silt push --lock KEY from this cache commits under it.
			if err := keepHeld(cache, cfg, key, lease); err != nil {
				return fmt.Errorf("lock acquire %s: record the lease in %s: %w", key, cache, err)
			}
		}
		// No Release: the lock must outlive this process. Its heartbeat
		// ends when the process does, and the lock lapses after --ttl.
		out["nonce"], out["token"], out["ttl_ms"] = lease.Nonce(), lease.Token(), ttl.Milliseconds()
		return c.result(out, func() {
			c.printf("acquired %s for %v\nnonce %s\ntoken %d\nrelease with: silt lock release%s --nonce %s %s\n",
				key, *ttl, lease.Nonce(), lease.Token(), where, lease.Nonce(), shellQuote(key))
		})
	case "inspect":
		info, err := l.Inspect(ctx)
		if err != nil {
			return err
		}
		out["held"] = info != nil
		if info != nil {
			out["holder"] = infoJSON(*info)
		}
		return c.result(out, func() {
			if info == nil {
				c.printf("%s is free\n", key)
				return
			}
			c.printf("%s is held by %v (ttl %v, nonce %s)\n", key, *info, info.TTL, info.Nonce)
		})
	case "release":
		ok, err := l.ForceRelease(ctx, *nonce)
		if err != nil {
			return err
		}
		if !ok {
			return &refusedError{msg: fmt.Sprintf("lock %s is not held under nonce %s", key, *nonce),
				hint: "it was released already, lapsed and was taken over, or the nonce is wrong: silt lock inspect" + where + " " + shellQuote(key)}
		}
		if h, ok := readHeld(cache, cfg, key); ok && h.Nonce == *nonce {
			dropHeld(cache, key)
		}
		out["released"] = true
		return c.result(out, func() { c.printf("released %s\n", key) })
	default: // force-release
		info, err := l.Inspect(ctx)
		if err != nil {
			return err
		}
		if info == nil {
			out["released"] = false
			return c.result(out, func() { c.printf("%s is free; nothing to do\n", key) })
		}
		if *nonce != "" && info.Nonce != *nonce {
			return &refusedError{msg: fmt.Sprintf("lock %s is held by %v, not under nonce %s", key, *info, *nonce)}
		}
		ok, err := l.ForceRelease(ctx, info.Nonce)
		if err != nil {
			return err
		}
		if !ok {
			return &refusedError{msg: fmt.Sprintf("lock %s changed hands while being released; nothing was done", key),
				hint: "inspect it again: silt lock inspect" + where + " " + shellQuote(key)}
		}
		if h, ok := readHeld(cache, cfg, key); ok && h.Nonce == info.Nonce {
			dropHeld(cache, key)
		}
		out["released"], out["holder"] = true, infoJSON(*info)
		return c.result(out, func() { c.printf("force-released %s from %v\n", key, *info) })
	}
}

func infoJSON(i lock.Info) map[string]any {
	return map[string]any{"holder": i.Holder, "hostname": i.Hostname, "pid": i.PID, "acquired_at": i.AcquiredAt,
		"ttl_ms": i.TTL.Milliseconds(), "nonce": i.Nonce, "token": i.Token}
}

// lockRoot opens the bucket of --url, or of the cache --dir is bound to,
// at its namespace root; then it returns that cache and its binding too.
func lockRoot(ctx context.Context, dir, url, ns string) (b, root backend.Backend, cache string, cfg binding, err error) {
	if url == "" && dir == "" {
		url = os.Getenv(envRemote)
	}
	if url == "" {
		cache = (&cli{}).findDir(dir)
		if cfg, err = readBinding(cache); err != nil {
			return nil, nil, "", binding{}, err
		}
		if ns != "" && ns != cfg.Namespace {
			return nil, nil, "", binding{}, usagef("--namespace goes with --url; %s is bound to namespace %q", cache, cfg.Namespace)
		}
		url, ns = cfg.URL, cfg.Namespace
	}
	b, root, err = openRoot(ctx, url, ns)
	return b, root, cache, cfg, err
}

// hasHeld tells whether the cache a lock command without --url works on
// recorded a lease on key (see lockheld.go).
func hasHeld(dir, url, key string) bool {
	if url != "" || (dir == "" && os.Getenv(envRemote) != "") {
		return false
	}
	cache := (&cli{}).findDir(dir)
	cfg, err := readBinding(cache)
	if err != nil {
		return false
	}
	_, ok := readHeld(cache, cfg, key)
	return ok
}
