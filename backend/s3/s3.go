package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3api "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/siltsync/silt/backend"
)

// Scheme is the URL scheme this package registers.
const Scheme = "s3"

func init() {
	backend.Register(Scheme, openURL)
}

// Backend is a bucket (or a prefix of one) on S3 or an S3-compatible store.
// Create it with New or backend.Open.
type Backend struct {
	client *s3api.Client
	cfg    Config
	region string // as resolved, for error messages
}

var _ backend.Driver = (*Backend)(nil)

// New returns a backend for cfg.Bucket. It sends no request: a missing
// bucket or bad credentials show on the first operation (use the probe
// package to check a store up front).
//
// The store comes back behind [backend.Portable], the only form in which a
// consumer may use a driver.
func New(ctx context.Context, cfg Config) (backend.Backend, error) {
	b, err := newDriver(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return backend.Portable(b), nil
}

func newDriver(ctx context.Context, cfg Config) (*Backend, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	client, err := cfg.client(ctx)
	if err != nil {
		return nil, err
	}
	return &Backend{client: client, cfg: cfg, region: client.Options().Region}, nil
}

func (b *Backend) full(key string) *string { return aws.String(b.cfg.Prefix + key) }

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	in := &s3api.GetObjectInput{Bucket: &b.cfg.Bucket, Key: b.full(key)}
	if opts.IfMatch != "" {
		in.IfMatch = aws.String(string(opts.IfMatch))
	}
	if opts.IfNoneMatch != "" {
		// A 304 Not Modified answer is classified as ErrNotModified.
		in.IfNoneMatch = aws.String(string(opts.IfNoneMatch))
	}
	if r := opts.Range; r != nil {
		// A 416 InvalidRange answer is classified as ErrInvalidRange.
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", r.Offset, r.End()-1))
	}
	var optFns []func(*s3api.Options)
	if opts.Range != nil {
		// A part of an object cannot be checked against the whole
		// object's checksum, which some stores (gofakes3) send with a
		// range anyway; a resumed read would then fail as corrupt. The
		// bytes of a range are verified above, against the entry's
		// sha256.
		optFns = append(optFns, func(o *s3api.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired })
	}
	out, err := b.client.GetObject(ctx, in, optFns...)
	if err != nil {
		err = b.classify("get", key, err)
		if opts.IfMatch != "" && errors.Is(err, backend.ErrInvalidRange) {
			err = backend.StaleOrInvalid(ctx, b, key, normalise(opts.IfMatch), err)
		}
		return nil, backend.ObjectInfo{}, err
	}
	v, err := version("get", key, out.ETag)
	switch {
	case err != nil:
		// No ETag: that error stands.
	case opts.IfMatch != "" && v != normalise(opts.IfMatch):
		// The store ignored If-Match (gofakes3 does on GET). The ETag of
		// this very response says which bytes we hold, so the check is
		// exact even then.
		err = backend.PreconditionFailed("get", key, fmt.Errorf("store returned version %s", v))
	case opts.IfNoneMatch != "" && v == normalise(opts.IfNoneMatch):
		// The store ignored If-None-Match and sent the unchanged object;
		// the body is closed unread, as a 304 would have sent none.
		err = backend.NotModified("get", key, fmt.Errorf("store ignored If-None-Match and returned version %s", v))
	}
	body, size := out.Body, aws.ToInt64(out.ContentLength)
	if r := opts.Range; r != nil && err == nil {
		body, size, err = ranged("get", key, *r, out)
	}
	if err != nil {
		out.Body.Close()
		return nil, backend.ObjectInfo{}, err
	}
	return body, backend.ObjectInfo{Key: key, Size: size, Version: v, ModTime: aws.ToTime(out.LastModified)}, nil
}

// Put implements backend.Backend. Objects of Config.MultipartThreshold
// bytes or more go up as a multipart upload whose condition is checked
// when it completes. ObjectInfo.ModTime is zero: S3 returns no time from
// a write, and a local clock would be a guess.
func (b *Backend) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	start, err := checkBody(key, body, size)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	if size > 0 && size >= b.cfg.MultipartThreshold {
		return b.putMultipart(ctx, key, body, start, size, cond)
	}
	in := &s3api.PutObjectInput{
		Bucket:        &b.cfg.Bucket,
		Key:           b.full(key),
		Body:          &window{r: body, start: start, n: size},
		ContentLength: aws.Int64(size),
	}
	in.IfNoneMatch, in.IfMatch = condHeaders(cond)
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		return backend.ObjectInfo{}, b.classify("put", key, err)
	}
	v, err := version("put", key, out.ETag)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	return backend.ObjectInfo{Key: key, Size: size, Version: v}, nil
}

// condHeaders maps a Cond to the If-None-Match and If-Match values of a
// PutObject or CompleteMultipartUpload.
func condHeaders(cond backend.Cond) (ifNoneMatch, ifMatch *string) {
	if cond.IfAbsent {
		ifNoneMatch = aws.String("*")
	}
	if cond.IfMatch != "" {
		ifMatch = aws.String(string(cond.IfMatch))
	}
	return ifNoneMatch, ifMatch
}

// Delete implements backend.Backend. A conditional delete needs
// Capabilities().ConditionalDelete, which backend.Portable enforces: on a
// store that ignores If-Match the request would delete whatever is there.
func (b *Backend) Delete(ctx context.Context, key string, cond backend.Cond) error {
	in := &s3api.DeleteObjectInput{Bucket: &b.cfg.Bucket, Key: b.full(key)}
	if cond.IfMatch != "" {
		in.IfMatch = aws.String(string(cond.IfMatch))
	}
	_, err := b.client.DeleteObject(ctx, in)
	return b.classify("delete", key, err)
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	out, err := b.client.HeadObject(ctx, &s3api.HeadObjectInput{Bucket: &b.cfg.Bucket, Key: b.full(key)})
	if err != nil {
		return backend.ObjectInfo{}, b.classify("stat", key, err)
	}
	v, err := version("stat", key, out.ETag)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	return backend.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Version: v, ModTime: aws.ToTime(out.LastModified)}, nil
}

// List implements backend.Backend with ListObjectsV2. Empty pages are not
// passed to fn: some stores (gofakes3) end a listing whose last page is
// exactly full with an extra empty one.
func (b *Backend) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	in := &s3api.ListObjectsV2Input{Bucket: &b.cfg.Bucket, Prefix: b.full(prefix), MaxKeys: aws.Int32(int32(opts.PageSize))}
	pages := s3api.NewListObjectsV2Paginator(b.client, in, func(o *s3api.ListObjectsV2PaginatorOptions) {
		// A store that repeats a token would otherwise loop forever.
		o.StopOnDuplicateToken = true
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return b.classify("list", prefix, err)
		}
		page := make([]backend.ObjectInfo, 0, len(out.Contents))
		for _, o := range out.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), b.cfg.Prefix)
			v, err := version("list", key, o.ETag)
			if err != nil {
				return err
			}
			page = append(page, backend.ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), Version: v, ModTime: aws.ToTime(o.LastModified)})
		}
		if len(page) == 0 {
			continue
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// Capabilities implements backend.Backend. S3 has been strongly consistent
// (read- and list-after-write) since December 2020.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		ConditionalPut:    true,
		AtomicCreate:      true,
		ConditionalDelete: !b.cfg.DisableConditionalDelete,
		ListAfterWrite:    true,
	}
}

// Endpoint names where requests go, for error messages.
func (b *Backend) Endpoint() string {
	ep := b.cfg.Endpoint
	if ep == "" {
		ep = "AWS (region " + b.region + ")"
	}
	return fmt.Sprintf("s3 endpoint %s, bucket %q", ep, b.cfg.Bucket)
}

// Close implements backend.Backend. The SDK client holds only idle
// connections, which the HTTP client closes on its own.
func (b *Backend) Close() error { return nil }

// version turns an ETag from a response into a Version. An object without
// an ETag could never be written conditionally, so it is an error rather
// than an empty Version.
func version(op, key string, etag *string) (backend.Version, error) {
	if aws.ToString(etag) == "" {
		return "", backend.Permanent(op, key, errors.New("store returned no ETag"))
	}
	return normalise(backend.Version(*etag)), nil
}

// normalise quotes an unquoted ETag. HTTP entity tags are quoted and AWS
// always quotes them, but some stores omit the quotes in one API and not
// another; without this a List version would never equal a Get version.
func normalise(v backend.Version) backend.Version {
	s := string(v)
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `W/"`) {
		return v
	}
	return backend.Version(`"` + s + `"`)
}

// checkBody returns body's current offset and fails when fewer than size
// bytes remain, which would otherwise surface as a transport error that
// backend.Retry retries.
func checkBody(key string, body io.ReadSeeker, size int64) (int64, error) {
	if size < 0 {
		return 0, backend.Permanent("put", key, fmt.Errorf("negative size %d", size))
	}
	start, err := body.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, backend.Permanent("put", key, fmt.Errorf("body: %w", err))
	}
	end, err := body.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, backend.Permanent("put", key, fmt.Errorf("body: %w", err))
	}
	if _, err := body.Seek(start, io.SeekStart); err != nil {
		return 0, backend.Permanent("put", key, fmt.Errorf("body: %w", err))
	}
	// Only the first size bytes are sent, so a longer body is fine here.
	return start, backend.CheckBodySize(key, min(end-start, size), size)
}

// window is the byte range [start, start+n) of r as a ReadSeeker of its
// own, so the SDK can hash, send and rewind exactly one object or part
// without copying it. Only one window of r may be in use at a time.
type window struct {
	r        io.ReadSeeker
	start, n int64
	off      int64 // position within the window
	placed   bool  // r is positioned at start+off
}

func (w *window) Read(p []byte) (int, error) {
	if w.off >= w.n {
		return 0, io.EOF
	}
	if !w.placed {
		if _, err := w.r.Seek(w.start+w.off, io.SeekStart); err != nil {
			return 0, err
		}
		w.placed = true
	}
	p = p[:min(int64(len(p)), w.n-w.off)]
	n, err := w.r.Read(p)
	w.off += int64(n)
	if err == io.EOF && w.off < w.n {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (w *window) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += w.off
	case io.SeekEnd:
		offset += w.n
	}
	if offset < 0 {
		return 0, errors.New("s3: seek before start of body")
	}
	w.off, w.placed = offset, false
	return offset, nil
}
