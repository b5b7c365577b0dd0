package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
)

// DefaultPageSize is the page size List asks a store for when
// ListOptions.PageSize is 0, and the largest it asks for (S3's and GCS's
// limit), so every store pages alike.
const DefaultPageSize = 1000

// ErrInvalidCond is returned when a Cond or GetOptions combines conditions
// that exclude each other (IfAbsent with IfMatch, IfMatch with
// IfNoneMatch), or a Put states a negative size: the caller's bug, refused
// before any I/O on every store alike.
var ErrInvalidCond = errors.New("invalid condition")

// Portable returns driver behind the checks every store shares, done once
// here rather than in each driver (gocloud's blob.Bucket over
// driver.Bucket is the model). Before any I/O it validates keys and
// prefixes ([ValidateKey], [ValidatePrefix]), refuses contradictory
// conditions ([ErrInvalidCond]) and conditions the driver's Capabilities
// do not claim ([ErrNotSupported]), refuses a context that is already done
// (returning its error), and fills ListOptions.PageSize. After the call it
// classifies what the driver left unclassified with [ClassifyTransport],
// Get bodies included. A driver therefore handles only what is its own:
// its store's error codes, in one classify function.
//
// Portable of a Portable returns it unchanged. Over any other layer (a
// fault injector over a store, say) it adds its checks again, so what the
// layer injects is classified as the store's own answers are.
func Portable(driver Driver) Backend {
	if p, ok := driver.(*portable); ok {
		return p
	}
	return &portable{inner: driver}
}

type portable struct {
	inner Driver
}

func (*portable) portableLayer() {}

func invalid(op, key, format string, args ...any) error {
	return &Error{Op: op, Key: key, Err: fmt.Errorf("%w: %s", ErrInvalidCond, fmt.Sprintf(format, args...))}
}

func unsupported(op, key, what string) error {
	return &Error{Op: op, Key: key, Err: fmt.Errorf("%s: %w", what, ErrNotSupported)}
}

func (p *portable) Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	if opts.IfMatch != "" && opts.IfNoneMatch != "" {
		return nil, ObjectInfo{}, invalid("get", key, "GetOptions sets both IfMatch and IfNoneMatch")
	}
	if r := opts.Range; r != nil && (r.Offset < 0 || r.Length < 1 || r.End() < r.Offset) {
		return nil, ObjectInfo{}, &Error{Op: "get", Key: key, Err: fmt.Errorf("offset %d length %d: %w", r.Offset, r.Length, ErrInvalidRange)}
	}
	if err := ctx.Err(); err != nil {
		return nil, ObjectInfo{}, err
	}
	rc, info, err := p.inner.Get(ctx, key, opts)
	if err != nil {
		return nil, info, p.classify(ctx, "get", key, err)
	}
	if r := opts.Range; r != nil && r.End() > info.Size {
		// Stores cut a range that ends past the object at its end (S3,
		// GCS); the contract refuses it on every store alike.
		rc.Close()
		return nil, info, &Error{Op: "get", Key: key, Err: fmt.Errorf("offset %d length %d of a %d-byte object: %w", r.Offset, r.Length, info.Size, ErrInvalidRange)}
	}
	body := &portableBody{rc: rc, ctx: ctx, key: key, p: p}
	if r := opts.Range; r != nil {
		// A store that sent more than the range (one that ignored Range
		// at offset 0) is cut at its end, and one that sent less fails
		// the read: the body holds exactly Length bytes or says why not.
		return &rangeBody{portableBody: body, left: r.Length}, info, nil
	}
	return body, info, nil
}

// rangeBody yields exactly the range's length from a ranged Get body.
type rangeBody struct {
	*portableBody
	left int64
}

func (b *rangeBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.portableBody.Read(p)
	b.left -= int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		err = b.p.classify(b.ctx, "get", b.key, fmt.Errorf("ranged body ended %d bytes short: %w", b.left, io.ErrUnexpectedEOF))
	case err == nil && b.left == 0:
		err = io.EOF
	}
	return n, err
}

// portableBody classifies failures met while reading a Get body, so a
// connection reset mid-download reads as one on every store.
type portableBody struct {
	p   *portable
	rc  io.ReadCloser
	ctx context.Context
	key string
}

func (b *portableBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.p.classify(b.ctx, "get", b.key, err)
	}
	return n, err
}

func (b *portableBody) Close() error { return b.rc.Close() }

func (p *portable) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond Cond) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	caps := p.inner.Capabilities()
	switch {
	case cond.IfAbsent && cond.IfMatch != "":
		return ObjectInfo{}, invalid("put", key, "Cond sets both IfAbsent and IfMatch")
	case cond.ContentNamed && cond.IfMatch != "":
		return ObjectInfo{}, invalid("put", key, "Cond sets both ContentNamed and IfMatch (a content-named key is never replaced)")
	case size < 0:
		return ObjectInfo{}, invalid("put", key, "negative size %d", size)
	case cond.IfMatch != "" && !caps.ConditionalPut:
		return ObjectInfo{}, unsupported("put", key, "Cond{IfMatch} on a store without ConditionalPut")
	case cond.IfAbsent && !caps.ConditionalPut && !caps.AtomicCreate:
		return ObjectInfo{}, unsupported("put", key, "Cond{IfAbsent} on a store without AtomicCreate")
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Put(ctx, key, body, size, cond)
	return info, p.classify(ctx, "put", key, err)
}

func (p *portable) Delete(ctx context.Context, key string, cond Cond) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	switch {
	case cond.IfAbsent || cond.ContentNamed:
		return unsupported("delete", key, "IfAbsent or ContentNamed on delete")
	case cond.IfMatch != "" && !p.inner.Capabilities().ConditionalDelete:
		return unsupported("delete", key, "Cond{IfMatch} on a store without ConditionalDelete")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.classify(ctx, "delete", key, p.inner.Delete(ctx, key, cond))
}

func (p *portable) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Stat(ctx, key)
	return info, p.classify(ctx, "stat", key, err)
}

func (p *portable) List(ctx context.Context, prefix string, opts ListOptions, fn func([]ObjectInfo) error) error {
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	opts.PageSize = pageSize(opts)
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := p.inner.List(ctx, prefix, opts, func(page []ObjectInfo) error {
		fnErr = fn(page)
		return fnErr
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return err // the caller's own error, as fn returned it
	}
	if err == nil {
		// A driver that stopped paging because ctx ended must not
		// report a complete listing.
		err = ctx.Err()
	}
	return p.classify(ctx, "list", prefix, err)
}

// classify is ClassifyTransport naming the endpoint when the failure is
// that it could not be reached, or that its TLS certificate was refused.
func (p *portable) classify(ctx context.Context, op, key string, err error) error {
	err = ClassifyTransport(ctx, op, key, err)
	var be *Error
	if !errors.As(err, &be) || be.Op != op || be.Key != key ||
		errors.Is(be.Err, ErrTLS) || errors.Is(be.Err, ErrUnreachable) {
		// Named already, by a Portable further down (a wrapper between
		// two, as Production(wrap.Faults(s3.New(..))) builds).
		return err
	}
	switch {
	case tlsFailure(be.Err):
		be.Err = fmt.Errorf("%w with %s: %w (an untrusted or self-signed certificate, or an http:// server behind an https:// URL)", ErrTLS, EndpointOf(p.inner), be.Err)
		be.Retryable = false
	case be.Retryable && unreachable(be.Err):
		be.Err = fmt.Errorf("%w: cannot connect to %s: %w", ErrUnreachable, EndpointOf(p.inner), netCause{be.Err})
	}
	return err
}

// netCause prints only the network's own words for a failure (dial tcp
// 127.0.0.1:1: connect: connection refused), not the SDK's wrapping of
// them (operation error S3: GetObject, exceeded maximum number of
// attempts, 1, https response error StatusCode: 0, RequestID: ...), which
// said nothing more and was repeated per attempt; errors.Is and errors.As
// still reach all of it.
type netCause struct{ err error }

func (c netCause) Error() string {
	var oe *net.OpError
	if errors.As(c.err, &oe) {
		return oe.Error()
	}
	var de *net.DNSError
	if errors.As(c.err, &de) {
		return de.Error()
	}
	return c.err.Error()
}

func (c netCause) Unwrap() error { return c.err }

func (p *portable) Capabilities() Capabilities { return p.inner.Capabilities() }

func (p *portable) Close() error { return p.inner.Close() }

// ClassifyTransport is the one classifier of failures to exchange a request
// at all, shared by every store. It returns err unchanged when it is nil,
// already in the vocabulary (an [*Error], a [*KeyError], a sentinel of
// this package), or a context error while ctx is done: the caller gave up,
// and [Retry] must see exactly that. Network failures (a net.Error, a
// url.Error, a connection reset, refused or broken, an unexpected EOF), and
// a client-side timeout while ctx is still live, become a retryable
// [*Error]. Anything else becomes a permanent one: nothing shows that
// trying again helps.
func ClassifyTransport(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	var be *Error
	var ke *KeyError
	switch {
	case errors.As(err, &be), errors.As(err, &ke),
		errors.Is(err, ErrNotExist), errors.Is(err, ErrPrecondition), errors.Is(err, ErrNotModified),
		errors.Is(err, ErrNotSupported), errors.Is(err, ErrInvalidCond), errors.Is(err, ErrInvalidRange):
		return err
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return err
	case transport(err):
		return Retryable(op, key, err)
	}
	return Permanent(op, key, err)
}

// tlsFailure reports a failed TLS handshake: retrying cannot fix a
// certificate.
func tlsFailure(err error) bool {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &cv) || errors.As(err, &rh)
}

// unreachable reports a failure to connect at all, as opposed to a
// connection that broke.
func unreachable(err error) bool {
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &de) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || (errors.As(err, &oe) && oe.Op == "dial" && !oe.Timeout())
}

// transport reports a failure to exchange a request and its response.
func transport(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}

// pageSize is the page size a List with opts asks the store for:
// opts.PageSize within 1..DefaultPageSize, else DefaultPageSize. Portable
// applies it, so a driver reads ListOptions.PageSize as it arrives.
func pageSize(opts ListOptions) int {
	if opts.PageSize <= 0 || opts.PageSize > DefaultPageSize {
		return DefaultPageSize
	}
	return opts.PageSize
}
