package gcs

import (
	"context"
	"net/url"
	"os"

	"github.com/siltsync/silt/backend"
)

// Scheme is the URL scheme this package registers.
const Scheme = "gs"

func init() {
	backend.Register(Scheme, openURL)
}

// openURL opens "gs://bucket/prefix". The storage client itself points at
// STORAGE_EMULATOR_HOST when it is set; conditional delete is then turned
// off because the common emulator ignores it (see the package doc).
func openURL(ctx context.Context, u *url.URL) (backend.Backend, error) {
	if err := backend.CheckParams(u); err != nil {
		return nil, err
	}
	bucket, prefix, err := backend.BucketAndPrefix(u)
	if err != nil {
		return nil, err
	}
	return New(ctx, Config{
		Bucket:              bucket,
		Prefix:              prefix,
		NoConditionalDelete: os.Getenv("STORAGE_EMULATOR_HOST") != "",
	})
}
