package main

import (
	"context"
	"flag"
	"net/url"

	"github.com/siltsync/silt/backend"
)

// onBucket is the bucket a command reads without a cache directory (log,
// check, export, verify, ls, cat, gc): one preamble for all of them.
type onBucket struct {
	url  string          // the URL for messages, any secret removed
	args []string        // the positional arguments after the URL
	b    backend.Backend // the store; Close closes it
	root backend.Backend // the namespace root
}

func (o *onBucket) Close() { o.b.Close() }

// bucketFlags returns the FlagSet of a command over a bucket, with its
// --namespace flag.
func (c *cli) bucketFlags(nsUsage string) (*flag.FlagSet, *string) {
	fs := c.newFlags()
	return fs, fs.String("namespace", "", nsUsage)
}

// openBucket parses args (between min and max positional arguments, the
// URL counted), takes the URL from them, $SILT_REMOTE or the enclosing
// cache's binding (whose namespace then applies unless --namespace says
// otherwise), and opens the bucket at the namespace root.
func (c *cli) openBucket(ctx context.Context, fs *flag.FlagSet, ns *string, args []string, min, max int) (*onBucket, error) {
	pos, err := c.parse(fs, args, min, max)
	if err != nil {
		return nil, err
	}
	if pos, err = c.withRemote(pos, min, max, ns); err != nil {
		return nil, err
	}
	b, root, err := openRoot(ctx, pos[0], *ns)
	if err != nil {
		return nil, err
	}
	return &onBucket{url: redactURL(pos[0]), args: pos[1:], b: b, root: root}, nil
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
