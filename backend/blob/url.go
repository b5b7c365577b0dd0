package blob

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	gcblob "gocloud.dev/blob"
	_ "gocloud.dev/blob/memblob" // the one driver linked in; see the package doc

	"github.com/siltsync/silt/backend"
)

// SchemePrefix marks a URL as a gocloud URL: "blob+mem://" opens "mem://".
const SchemePrefix = "blob+"

// drivers lists the gocloud schemes registered as SchemePrefix+scheme, with
// what each driver guarantees (see Config). fileblob's IfNotExist is
// stat-then-rename and was measured to admit several creators.
var drivers = map[string]Config{
	"mem":    {AtomicCreate: true, ListAfterWrite: true},
	"file":   {AtomicCreate: false, ListAfterWrite: true},
	"s3":     {AtomicCreate: true, ListAfterWrite: true},
	"gs":     {AtomicCreate: true, ListAfterWrite: true},
	"azblob": {AtomicCreate: true, ListAfterWrite: true},
}

func init() {
	for scheme := range drivers {
		backend.Register(SchemePrefix+scheme, openURL)
	}
}

// openURL hands the URL without its prefix to gocloud, whose driver opener
// validates the query parameters.
func openURL(ctx context.Context, u *url.URL) (backend.Backend, error) {
	scheme := strings.TrimPrefix(u.Scheme, SchemePrefix)
	cfg, ok := drivers[scheme]
	if !ok {
		return nil, fmt.Errorf("backend: %s: unknown gocloud scheme %q", u.Scheme, scheme)
	}
	inner := *u
	inner.Scheme = scheme
	bkt, err := gcblob.OpenBucket(ctx, inner.String())
	if err != nil {
		return nil, fmt.Errorf("backend: %s URL: %w (is the gocloud driver for %q blank-imported?)", u.Scheme, err, scheme)
	}
	b := New(bkt, cfg)
	b.ownBucket = true
	return b, nil
}
