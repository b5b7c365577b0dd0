package backend

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// The URL query parameters, understood by every scheme, that set the
// bounds of [Options]: "s3://bucket?timeout=1m&first_byte_timeout=10s".
const (
	ParamTimeout          = "timeout"            // Options.Timeout
	ParamFirstByteTimeout = "first_byte_timeout" // Options.FirstByteTimeout
	ParamStallTimeout     = "stall_timeout"      // Options.StallTimeout
)

// Options configure the layers [Open] and [Production] put over a store.
type Options struct {
	// Timeout is the operation deadline: how long one request, all its
	// attempts and the waits between them counted, may go without
	// progress before it fails (RetryConfig.Deadline). An endpoint that
	// never answers fails in about this long; a moving transfer is never
	// cut by it. 0 means [DefaultTimeout] (15 s); negative means no
	// bounds at all (no Timeouts layer, no deadline).
	Timeout time.Duration
	// FirstByteTimeout bounds one attempt's wait for the store to begin
	// answering (TimeoutConfig.FirstByte); 0 means
	// [DefaultFirstByteTimeout] (5 s).
	FirstByteTimeout time.Duration
	// StallTimeout bounds a started transfer's wait for its next byte
	// (TimeoutConfig.Stall); 0 means [DefaultStallTimeout] (30 s).
	StallTimeout time.Duration
	// Retry bounds the resends of retryable failures (see [Retry]). Its
	// Deadline, when 0, is Timeout.
	Retry RetryConfig
}

// Option changes Options.
type Option func(*Options)

// WithTimeout sets Options.Timeout. A URL's ?timeout= overrides it.
func WithTimeout(d time.Duration) Option { return func(o *Options) { o.Timeout = d } }

// WithFirstByteTimeout sets Options.FirstByteTimeout. A URL's
// ?first_byte_timeout= overrides it.
func WithFirstByteTimeout(d time.Duration) Option {
	return func(o *Options) { o.FirstByteTimeout = d }
}

// WithStallTimeout sets Options.StallTimeout. A URL's ?stall_timeout=
// overrides it.
func WithStallTimeout(d time.Duration) Option { return func(o *Options) { o.StallTimeout = d } }

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
//	Retry       resends retryable failures with jittered backoff, within
//	            the operation deadline (Options.Timeout, 15 s)
//	Timeouts    bounds each attempt's wait: first byte (5 s), stalls (30 s)
//	Portable    key, condition and context checks; transport errors
//	driver      the scheme's store
//
// Besides each scheme's own query parameters, every URL accepts
// "timeout", "first_byte_timeout" and "stall_timeout" (Go durations,
// "45s"), which override [WithTimeout], [WithFirstByteTimeout] and
// [WithStallTimeout].
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
	for _, p := range []struct {
		name string
		dst  *time.Duration
	}{{ParamTimeout, &o.Timeout}, {ParamFirstByteTimeout, &o.FirstByteTimeout}, {ParamStallTimeout, &o.StallTimeout}} {
		if !q.Has(p.name) {
			continue
		}
		d, err := time.ParseDuration(q.Get(p.name))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("backend: %s URL parameter %s=%q: want a positive duration such as 30s or 2m", u.Scheme, p.name, q.Get(p.name))
		}
		*p.dst = d
		q.Del(p.name)
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
	if o.Timeout < 0 {
		o.Retry.Deadline = -1
		return Retry(b, o.Retry)
	}
	b = Timeouts(b, TimeoutConfig{FirstByte: o.FirstByteTimeout, Stall: o.StallTimeout})
	if o.Retry.Deadline == 0 {
		o.Retry.Deadline = o.Timeout
	}
	return Retry(b, o.Retry)
}
