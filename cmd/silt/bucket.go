package main

import (
	"context"
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	iofs "io/fs"
	"net/url"
	"path"

	"github.com/siltsync/silt/backend"
)

// onBucket is the bucket a command reads without a cache directory (log,
// check, export, verify, ls, cat, gc): one preamble for all of them.
type onBucket struct {
	url  string          // the URL for messages, any secret removed
	args []string        // the positional arguments after the URL
	b    backend.Backend // the store; Close closes it
	root backend.Backend // the namespace root
	// cache is the data root of the cache whose binding gave the URL, or "".
	cache string
	// dirOpt is that cache's --dir for hints (see dirOpt).
	dirOpt string
}

func (o *onBucket) Close() { o.b.Close() }

// bucketFlags declares the flags of a command over a bucket: --namespace,
// and --dir, the cache whose binding names the bucket when no URL is given.
func bucketFlags(fs *flag.FlagSet, nsUsage string) (ns, dir *string) {
	return fs.String("namespace", "", nsUsage),
		fs.String("dir", "", "with no URL: the cache `DIR`ectory whose bucket and namespace to use (default: $SILT_DIR, else the cache at or above the working directory)")
}

// openBucket takes the URL from pos (between min and max positional
// arguments, the URL counted), $SILT_REMOTE or the cache's binding (whose
// namespace then applies unless --namespace says otherwise), and opens the
// bucket at the namespace root. A read command (readOnly) never creates a
// bucket: a file:// directory that does not exist is an error.
func (c *cli) openBucket(ctx context.Context, ns, dir *string, pos []string, min, max int, readOnly bool) (*onBucket, error) {
	pos, fromCache, err := c.withRemote(pos, min, max, ns, *dir)
	if err != nil {
		return nil, err
	}
	opt := ""
	if fromCache != "" {
		opt = c.dirOpt(c.findDir(*dir))
	}
	u := pos[0]
	if readOnly {
		u = noCreate(u)
	}
	b, root, err := openRoot(ctx, u, *ns)
	if readOnly && u != pos[0] && errors.Is(err, iofs.ErrNotExist) {
		return nil, withHint(fmt.Errorf("no bucket at %s: the directory does not exist, and reading a bucket creates none", redactURL(pos[0])),
			"check the URL for a typo; silt init creates a file:// bucket")
	}
	if err != nil {
		return nil, err
	}
	return &onBucket{url: redactURL(pos[0]), args: pos[1:], b: b, root: root, cache: fromCache, dirOpt: opt}, nil
}

// path turns a path argument into the bucket path it names: inside the
// cache whose binding gave the URL, relative to the working directory, as
// pull and push take it; "." is the whole namespace.
func (o *onBucket) path(c *cli, p string) (string, error) {
	if o.cache != "" {
		ps, err := c.cachePaths(o.cache, []string{p})
		if err != nil {
			return "", err
		}
		p = ps[0]
	}
	if p = path.Clean(p); p == "." || p == "/" {
		return "", nil
	}
	return p, nil
}

// noCreate adds create=false to a file:// URL that does not say: reading a
// bucket must not make one.
func noCreate(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || u.Query().Has("create") {
		return raw
	}
	q := u.Query()
	q.Set("create", "false")
	u.RawQuery = q.Encode()
	return u.String()
}

// redactURL returns raw with the password of any user info replaced, as
// every message and output shows a URL (an s3:// URL may carry a key
// pair).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}
