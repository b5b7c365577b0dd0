package backend

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// ParamTimeout is the URL query parameter, understood by every scheme,
// that sets [Options].Timeout: "s3://bucket?timeout=2m".
const ParamTimeout = "timeout"

// Options configure the layers [Open] and [Production] put over a store.
type Options struct {
	// Timeout is how long a request may go without progress (see
	// [Timeout]); 0 means [DefaultTimeout], negative means no deadline.
	Timeout time.Duration
	// Retry bounds the resends of retryable failures (see [Retry]).
	Retry RetryConfig
}

// Option changes Options.
type Option func(*Options)

// WithTimeout sets Options.Timeout. A URL's ?timeout= overrides it.
func WithTimeout(d time.Duration) Option { return func(o *Options) { o.Timeout = d } }

// WithRetry sets Options.Retry.
func WithRetry(cfg RetryConfig) Option { return func(o *Options) { o.Retry = cfg } }

// Open opens the store named by rawURL, ready for production use. It is
// the one function that opens a store for users: the CLI, the examples and
// any embedding program call it. Examples: "file:///srv/bucket",
// "mem://name", "s3://bucket/prefix?region=eu-west-1", "gs://bucket",
// "blob+azblob://container". A key prefix in the URL path is applied to
// every key. The package of the scheme must be linked in (a blank import
// registers it).
//
// The store comes back as [Production] builds it, from the outside in:
//
//	Retry       resends retryable failures with jittered backoff
//	Timeout     fails a request that makes no progress (per attempt)
//	Portable    key, condition and context checks; transport errors
//	driver      the scheme's store
//
// Besides each scheme's own query parameters, every URL accepts
// "timeout" (a Go duration, "45s"), which overrides [WithTimeout].
func Open(ctx context.Context, rawURL string, opts ...Option) (Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("backend: parse URL %q: %w", rawURL, err)
	}
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	q := u.Query()
	if q.Has(ParamTimeout) {
		d, err := time.ParseDuration(q.Get(ParamTimeout))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("backend: %s URL parameter %s=%q: want a positive duration such as 30s or 2m", u.Scheme, ParamTimeout, q.Get(ParamTimeout))
		}
		o.Timeout = d
		q.Del(ParamTimeout)
		u.RawQuery = q.Encode()
	}
	driver, err := openDriver(ctx, u, rawURL)
	if err != nil {
		return nil, err
	}
	return compose(driver, o), nil
}

// Production puts the layers [Open] uses over a store built directly (with
// a driver's New, say), in the same order. Tests put a fault injector or a
// latency wrapper under it, where a real network's failures would arise.
func Production(driver Backend, opts ...Option) Backend {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	return compose(driver, o)
}

func compose(driver Backend, o Options) Backend {
	b := Portable(driver)
	if o.Timeout >= 0 {
		b = Timeout(b, o.Timeout)
	}
	return Retry(b, o.Retry)
}
