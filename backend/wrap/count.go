package wrap

import (
	"context"
	"io"
	"sync"

	"github.com/siltsync/silt/backend"
)

// Verb names a kind of request, as counted by Counting.
type Verb string

// The verbs Counting distinguishes. A conditional Put (IfAbsent or IfMatch)
// is VerbCondPut, not VerbPut; each List page is one VerbList request.
const (
	VerbGet     Verb = "get"
	VerbPut     Verb = "put"
	VerbCondPut Verb = "condput"
	VerbDelete  Verb = "delete"
	VerbList    Verb = "list"
	VerbStat    Verb = "stat"
)

// Counts is a snapshot of requests and bytes, per verb.
type Counts struct {
	Get, Put, CondPut, Delete, List, Stat int64 // requests sent
	BytesDown, BytesUp                    int64 // body bytes read by Get, sent by Put
}

// Total is the number of requests of every verb.
func (c Counts) Total() int64 { return c.Get + c.Put + c.CondPut + c.Delete + c.List + c.Stat }

// Sub returns c minus earlier, for the cost of one operation.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{
		Get: c.Get - earlier.Get, Put: c.Put - earlier.Put, CondPut: c.CondPut - earlier.CondPut,
		Delete: c.Delete - earlier.Delete, List: c.List - earlier.List, Stat: c.Stat - earlier.Stat,
		BytesDown: c.BytesDown - earlier.BytesDown, BytesUp: c.BytesUp - earlier.BytesUp,
	}
}

// Request is one logged request.
type Request struct {
	Verb Verb
	Key  string // key, or prefix for List
}

// maxLog bounds the request log so a long benchmark cannot grow it without
// limit; counts are always exact.
const maxLog = 1 << 20

// Counting is a backend that counts every request it passes on, and logs
// (verb, key) pairs for tests that assert which keys an operation touched.
// A request is counted when it is sent, whether or not it succeeds.
type Counting struct {
	layer
	mu  sync.Mutex
	c   Counts
	log []Request
}

// Count wraps b in a request counter.
func Count(b backend.Backend) *Counting { return &Counting{layer: b} }

var _ backend.Backend = (*Counting)(nil)

// Unwrap returns the wrapped backend.
func (c *Counting) Unwrap() backend.Backend { return c.layer }

// Counts returns the counts so far.
func (c *Counting) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c
}

// Log returns a copy of the requests logged so far (at most the first
// million).
func (c *Counting) Log() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.log...)
}

// Reset zeroes the counts and clears the log.
func (c *Counting) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c = Counts{}
	c.log = nil
}

func (c *Counting) record(v Verb, key string, down, up int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch v {
	case VerbGet:
		c.c.Get++
	case VerbPut:
		c.c.Put++
	case VerbCondPut:
		c.c.CondPut++
	case VerbDelete:
		c.c.Delete++
	case VerbList:
		c.c.List++
	case VerbStat:
		c.c.Stat++
	}
	c.c.BytesDown += down
	c.c.BytesUp += up
	if len(c.log) < maxLog {
		c.log = append(c.log, Request{v, key})
	}
}

func (c *Counting) addDown(n int64) {
	c.mu.Lock()
	c.c.BytesDown += n
	c.mu.Unlock()
}

// Get implements backend.Backend; bytes are counted as the caller reads them.
func (c *Counting) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	c.record(VerbGet, key, 0, 0)
	rc, info, err := c.layer.Get(ctx, key, opts)
	if err != nil {
		return nil, info, err
	}
	return &countingReader{rc: rc, c: c}, info, nil
}

type countingReader struct {
	rc io.ReadCloser
	c  *Counting
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.c.addDown(int64(n))
	return n, err
}

func (r *countingReader) Close() error { return r.rc.Close() }

// Put implements backend.Backend.
func (c *Counting) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	v := VerbPut
	if !cond.IsZero() {
		v = VerbCondPut
	}
	c.record(v, key, 0, size)
	return c.layer.Put(ctx, key, body, size, cond)
}

// Delete implements backend.Backend.
func (c *Counting) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	c.record(VerbDelete, key, 0, 0)
	return c.layer.Delete(ctx, key, cond)
}

// Stat implements backend.Backend.
func (c *Counting) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	c.record(VerbStat, key, 0, 0)
	return c.layer.Stat(ctx, key)
}

// List implements backend.Backend; every page delivered counts as one
// request, and a listing that delivers no page counts as one.
func (c *Counting) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	pages := 0
	err := c.layer.List(ctx, prefix, opts, func(page []backend.ObjectInfo) error {
		pages++
		c.record(VerbList, prefix, 0, 0)
		return fn(page)
	})
	if pages == 0 {
		c.record(VerbList, prefix, 0, 0)
	}
	return err
}

// Capabilities implements backend.Backend.
func (c *Counting) Capabilities() backend.Capabilities { return c.layer.Capabilities() }

// Close implements backend.Backend.
func (c *Counting) Close() error { return c.layer.Close() }
