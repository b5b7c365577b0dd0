package gcs

import (
	"context"
	"fmt"
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
func openURL(ctx context.Context, u *url.URL) (backend.Driver, error) {
	cfg, err := configFromURL(u)
	if err != nil {
		return nil, err
	}
	return newDriver(ctx, cfg)
}

// paramCredentials names a credentials file: gs://bucket?credentials=FILE.
const paramCredentials = "credentials"

// configFromURL parses a gs:// URL, rejecting unknown parameters.
func configFromURL(u *url.URL) (Config, error) {
	if err := backend.CheckParams(u, paramCredentials); err != nil {
		return Config{}, err
	}
	bucket, prefix, err := backend.BucketAndPrefix(u)
	if err != nil {
		return Config{}, err
	}
	q := u.Query()
	if q.Has(paramCredentials) && q.Get(paramCredentials) == "" {
		return Config{}, fmt.Errorf("backend: gs URL parameter %s is empty: want the path of a credentials JSON file", paramCredentials)
	}
	cfg := Config{
		Bucket:              bucket,
		Prefix:              prefix,
		NoConditionalDelete: os.Getenv("STORAGE_EMULATOR_HOST") != "",
		CredentialsFile:     q.Get(paramCredentials),
	}
	if cfg.CredentialsFile != "" {
		cfg.credentialsFrom = "the URL's ?credentials="
	}
	return cfg, nil
}
