package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
)

// defaultChunkSize is the storage client's default upload chunk. Smaller
// objects get a chunk just large enough for them, because the writer
// allocates a whole chunk per Put.
const defaultChunkSize = 16 << 20

// Backend is a GCS bucket, or a prefix of one. Create it with New.
type Backend struct {
	bucket     *storage.BucketHandle
	name       string
	prefix     string
	client     *storage.Client
	ownsClient bool
	condDelete bool
	creds      string // the credential source, for Describe
}

var _ backend.Driver = (*Backend)(nil)

// New returns a backend for cfg.Bucket. It sends no request, so a missing
// bucket or missing permission shows on the first operation.
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
	if cfg.Bucket == "" {
		return nil, errors.New("gcs: Config.Bucket is empty")
	}
	prefix, err := normPrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	client, owns, creds := cfg.Client, false, "the caller's storage.Client"
	if client == nil {
		var opts []option.ClientOption
		if opts, creds, err = credentials(cfg); err != nil {
			return nil, err
		}
		// JSON reads, because only they carry ifGenerationNotMatch: an
		// unchanged manifest then costs a bodyless 304. (They report no
		// modification time on Get; nothing in silt reads it there.)
		opts = append(opts, storage.WithJSONReads())
		if client, err = storage.NewClient(ctx, opts...); err != nil {
			if strings.Contains(err.Error(), "could not find default credentials") {
				return nil, fmt.Errorf("gcs: %w: no Google credentials found; silt looked in GOOGLE_APPLICATION_CREDENTIALS, gcloud's application_default_credentials.json (run: gcloud auth application-default login) and the GCE metadata server: %w", backend.ErrCredentials, err)
			}
			return nil, fmt.Errorf("gcs: create client: %w", err)
		}
		owns = true
	}
	// silt's retry wrapper owns retries; the client's own would replay
	// conditional writes whose first attempt may already have landed.
	bh := client.Bucket(cfg.Bucket).Retryer(storage.WithPolicy(storage.RetryNever))
	return &Backend{
		bucket: bh, name: cfg.Bucket, prefix: prefix,
		client: client, ownsClient: owns, condDelete: !cfg.NoConditionalDelete, creds: creds,
	}, nil
}

func (b *Backend) call(op, key string, conditional bool) call {
	return call{op: op, bucket: b.name, key: key, conditional: conditional}
}

// generation parses a Version. Only positive integers name an object: 0
// would mean "does not exist" to GCS, turning IfMatch into IfAbsent.
func generation(op, key string, v backend.Version) (int64, error) {
	g, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || g <= 0 {
		return 0, backend.PreconditionFailed(op, key, fmt.Errorf("version %q is not a GCS generation", v))
	}
	return g, nil
}

func version(g int64) backend.Version { return backend.Version(strconv.FormatInt(g, 10)) }

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	obj := b.bucket.Object(b.prefix + key)
	var want int64
	if opts.IfMatch != "" {
		g, err := generation("get", key, opts.IfMatch)
		if err != nil {
			return nil, backend.ObjectInfo{}, err
		}
		want = g
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	// A version that is not a generation (from another store) can never
	// be current, so it sets no condition and the object is read.
	var unwanted int64
	if g, err := strconv.ParseInt(string(opts.IfNoneMatch), 10, 64); err == nil && g > 0 && want == 0 {
		unwanted = g
		obj = obj.If(storage.Conditions{GenerationNotMatch: g})
	}
	// Only IfMatch makes a missing object a precondition failure; under
	// IfNoneMatch it is ErrNotExist as usual.
	c := b.call("get", key, want != 0)
	offset, length := int64(0), int64(-1)
	if rg := opts.Range; rg != nil {
		offset, length = rg.Offset, rg.Length
	}
	// A 416 answer (an offset at or past the end) is classified as
	// ErrInvalidRange.
	r, err := obj.NewRangeReader(ctx, offset, length)
	if err != nil {
		err = classify(c, err)
		if want != 0 && errors.Is(err, backend.ErrInvalidRange) {
			err = backend.StaleOrInvalid(ctx, b, key, version(want), err)
		}
		return nil, backend.ObjectInfo{}, err
	}
	// Checked here too because emulators ignore read preconditions, and
	// the client sends ifGenerationNotMatch only on JSON reads (see the
	// package doc); the generation comes from the same response as the
	// bytes, so this is exact, not a race.
	switch {
	case want != 0 && r.Attrs.Generation != want:
		r.Close()
		return nil, backend.ObjectInfo{}, backend.PreconditionFailed("get", key,
			fmt.Errorf("generation is %d, want %d", r.Attrs.Generation, want))
	case unwanted != 0 && r.Attrs.Generation == unwanted:
		r.Close()
		return nil, backend.ObjectInfo{}, backend.NotModified("get", key,
			fmt.Errorf("generation is still %d", unwanted))
	}
	// Attrs.Size is the whole object's, from Content-Range on a 206.
	info := backend.ObjectInfo{Key: key, Size: r.Attrs.Size, Version: version(r.Attrs.Generation), ModTime: r.Attrs.LastModified}
	if rg := opts.Range; rg != nil {
		switch {
		case !rg.Within(r.Attrs.Size):
			// GCS cuts a range that ends past the object at its end.
			r.Close()
			return nil, info, backend.RangeOutside("get", key, *rg, r.Attrs.Size)
		case r.Attrs.StartOffset != rg.Offset || r.Remain() < rg.Length:
			// At offset 0 the client accepts a whole-object 200 from a
			// store that ignored Range; backend.Portable cuts that at
			// the range's end. Anything else is not the range asked for.
			r.Close()
			return nil, backend.ObjectInfo{}, backend.Permanent("get", key,
				fmt.Errorf("asked for %d bytes from offset %d, the store sent %d from offset %d", rg.Length, rg.Offset, r.Remain(), r.Attrs.StartOffset))
		}
		return &reader{r: r, c: c, left: rg.Length}, info, nil
	}
	return &reader{r: r, c: c, left: -1}, info, nil
}

// reader classifies errors met mid-stream, so a reset connection is
// retryable like one met while opening.
type reader struct {
	r    *storage.Reader
	c    call
	left int64 // bytes of the range still to read; -1 reads to the end
}

func (r *reader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.r.Read(p)
	if r.left > 0 {
		r.left -= int64(n)
	}
	if err != nil && err != io.EOF {
		err = classify(r.c, err)
	}
	return n, err
}

func (r *reader) Close() error { return r.r.Close() }

// Put implements backend.Backend. Nothing is sent before the whole body has
// been read (for objects up to 16 MiB) and the writer is committed only by
// Close, which is never reached after an error: a cancelled or failed Put
// cancels the writer's context instead, so no partial object appears.
func (b *Backend) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	obj := b.bucket.Object(b.prefix + key)
	switch {
	case cond.IfAbsent:
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	case cond.IfMatch != "":
		g, err := generation("put", key, cond.IfMatch)
		if err != nil {
			return backend.ObjectInfo{}, err
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	c := b.call("put", key, !cond.IsZero())

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.NewWriter(wctx)
	w.ChunkSize = int(min(size+1, defaultChunkSize))
	abort := func(err error) (backend.ObjectInfo, error) {
		cancel()
		_ = w.Close() // fails with the cancellation; the upload is abandoned
		return backend.ObjectInfo{}, err
	}
	n, err := io.Copy(w, io.LimitReader(body, size+1))
	if ctxErr := ctx.Err(); ctxErr != nil {
		return abort(ctxErr)
	}
	if err != nil {
		return abort(classify(c, err))
	}
	if err := backend.CheckBodySize(key, n, size); err != nil {
		return abort(err)
	}
	if err := w.Close(); err != nil {
		return backend.ObjectInfo{}, classify(c, err)
	}
	a := w.Attrs()
	return backend.ObjectInfo{Key: key, Size: a.Size, Version: version(a.Generation), ModTime: a.Updated}, nil
}

// Delete implements backend.Backend.
func (b *Backend) Delete(ctx context.Context, key string, cond backend.Cond) error {
	obj := b.bucket.Object(b.prefix + key)
	// backend.Portable refuses IfAbsent, and IfMatch unless
	// Capabilities().ConditionalDelete says the Config allows it.
	if cond.IfMatch != "" {
		g, err := generation("delete", key, cond.IfMatch)
		if err != nil {
			return err
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	err := classify(b.call("delete", key, cond.IfMatch != ""), obj.Delete(ctx))
	if cond.IsZero() && backend.IsNotExist(err) {
		return nil
	}
	return err
}

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	a, err := b.bucket.Object(b.prefix + key).Attrs(ctx)
	if err != nil {
		return backend.ObjectInfo{}, classify(b.call("stat", key, false), err)
	}
	return backend.ObjectInfo{Key: key, Size: a.Size, Version: version(a.Generation), ModTime: a.Updated}, nil
}

// List implements backend.Backend. GCS lists names in byte order and
// strongly consistently, so pages are passed on as they arrive.
func (b *Backend) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	q := &storage.Query{Prefix: b.prefix + prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
		return backend.Permanent("list", prefix, err)
	}
	pager := iterator.NewPager(b.bucket.Objects(ctx, q), opts.PageSize, "")
	for {
		var attrs []*storage.ObjectAttrs
		token, err := pager.NextPage(&attrs)
		if err != nil {
			return classify(b.call("list", prefix, false), err)
		}
		if len(attrs) > 0 {
			page := make([]backend.ObjectInfo, len(attrs))
			for i, a := range attrs {
				page[i] = backend.ObjectInfo{Key: strings.TrimPrefix(a.Name, b.prefix), Size: a.Size, Version: version(a.Generation), ModTime: a.Updated}
			}
			if err := fn(page); err != nil {
				return err
			}
		}
		if token == "" {
			return ctx.Err()
		}
	}
}

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		ConditionalPut:              true,
		AtomicCreate:                true,
		ConditionalDelete:           b.condDelete,
		MaxMutationsPerKeyPerSecond: 1,
		ListAfterWrite:              true,
	}
}

// Endpoint names where requests go, for error messages.
func (b *Backend) Endpoint() string {
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		return fmt.Sprintf("gcs emulator %s, bucket %q", h, b.name)
	}
	return fmt.Sprintf("gcs bucket %q", b.name)
}

// Close implements backend.Backend. It closes the client only if New
// created it.
func (b *Backend) Close() error {
	if b.ownsClient {
		return b.client.Close()
	}
	return nil
}

// Describe implements backend.Describer; the credential source was
// settled by New, which checked any credentials file.
func (b *Backend) Describe() backend.Description {
	endpoint := "https://storage.googleapis.com"
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		endpoint = host + " (STORAGE_EMULATOR_HOST)"
	}
	return backend.Description{Scheme: Scheme, Bucket: b.name, Prefix: b.prefix, Endpoint: endpoint, Credentials: b.creds}
}
