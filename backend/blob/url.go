package blob

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	gcblob "gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://: Azure Blob, which has no native silt backend
	_ "gocloud.dev/blob/memblob"   // mem://: a portable in-process bucket

	"github.com/siltsync/silt/backend"
)

// SchemePrefix marks a URL as a gocloud URL: "blob+mem://" opens "mem://".
const SchemePrefix = "blob+"

// drivers lists the gocloud schemes this package links, with what each
// driver guarantees (see Config). Only linked drivers are listed, so every
// registered scheme opens: S3, GCS and directories have native backends
// (s3://, gs://, file://) and are not linked here.
var drivers = map[string]Config{
	"mem": {AtomicCreate: true, ListAfterWrite: true},
	// Azure Blob creates with If-None-Match: * and is strongly consistent.
	"azblob": {AtomicCreate: true, ListAfterWrite: true},
}

func init() {
	for scheme := range drivers {
		// A driver dropped from the imports above must not leave a
		// scheme that cannot open.
		if !slices.Contains(gcblob.DefaultURLMux().BucketSchemes(), scheme) {
			panic(fmt.Sprintf("blob: gocloud driver for %q is not linked", scheme))
		}
		backend.Register(SchemePrefix+scheme, openURL)
	}
}

// openURL hands the URL without its prefix to gocloud, whose driver opener
// validates the query parameters.
func openURL(ctx context.Context, u *url.URL) (backend.Driver, error) {
	scheme := strings.TrimPrefix(u.Scheme, SchemePrefix)
	cfg, ok := drivers[scheme]
	if !ok {
		return nil, fmt.Errorf("backend: %s: unknown gocloud scheme %q", u.Scheme, scheme)
	}
	inner := *u
	inner.Scheme = scheme
	bkt, err := gcblob.OpenBucket(ctx, inner.String())
	if err != nil {
		return nil, fmt.Errorf("backend: %s URL: %w", u.Scheme, err)
	}
	b := newDriver(bkt, cfg)
	b.ownBucket = true
	b.scheme, b.name = u.Scheme, u.Host
	return b, nil
}
