package backend

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
)

// OpenFunc opens a store's driver from a parsed URL; the registry puts
// [Portable] over it. It must reject query parameters it does not know
// (see CheckParams).
type OpenFunc func(ctx context.Context, u *url.URL) (Driver, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]OpenFunc{}
)

// Register makes a URL scheme available to Open. It panics if the scheme is
// registered twice, so a conflict shows at start-up, not as a silent
// override.
func Register(scheme string, open OpenFunc) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic(fmt.Sprintf("backend: scheme %q registered twice", scheme))
	}
	registry[scheme] = open
}

// Schemes lists the registered URL schemes, sorted.
func Schemes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// openDriver opens the driver a URL names behind [Portable], whatever its
// opener returned, with none of the other layers [Open] adds; u no longer
// holds the parameters Open consumed.
func openDriver(ctx context.Context, u *url.URL, rawURL string) (Backend, error) {
	if u.Scheme == "" {
		return nil, fmt.Errorf("backend: URL %q has no scheme (want one of %s)", rawURL, strings.Join(Schemes(), ", "))
	}
	registryMu.RLock()
	open, ok := registry[u.Scheme]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("backend: unsupported scheme %q in %q (registered: %s)", u.Scheme, rawURL, strings.Join(Schemes(), ", "))
	}
	driver, err := open(ctx, u)
	if err != nil {
		return nil, err
	}
	return Portable(driver), nil
}

// CheckParams returns an error naming the first query parameter of u that
// is not in allowed.
func CheckParams(u *url.URL, allowed ...string) error {
	var unknown []string
	for k := range u.Query() {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("backend: %s URL: unknown parameter %q (known: %s)", u.Scheme, unknown[0], strings.Join(allowed, ", "))
}

// BucketAndPrefix splits a URL of the form scheme://bucket/some/prefix into
// its bucket and key prefix. The prefix, if any, is returned with a trailing
// slash and validated.
func BucketAndPrefix(u *url.URL) (bucket, prefix string, err error) {
	bucket = u.Host
	if bucket == "" {
		return "", "", fmt.Errorf("backend: %s URL %q names no bucket", u.Scheme, u.Redacted())
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix == "" {
		return bucket, "", nil
	}
	if err := ValidateKey(prefix); err != nil {
		return "", "", fmt.Errorf("backend: %s URL prefix: %w", u.Scheme, err)
	}
	return bucket, prefix + "/", nil
}
