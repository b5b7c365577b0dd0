package proxy

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/siltsync/silt/internal/backoff"
)

// Proxy is an http.Handler that forwards to one S3 server, counting and
// delaying every request. It is safe for concurrent use.
type Proxy struct {
	rp    *httputil.ReverseProxy
	delay atomic.Int64 // nanoseconds

	mu     sync.Mutex
	counts map[string]int64
	errors int64
}

// New returns a proxy to the S3 server at target (e.g.
// "http://127.0.0.1:7070") that delays every request by delay.
func New(target string, delay time.Duration) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("proxy: target %q: %w", target, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("proxy: target %q: want http://host:port", target)
	}
	p := &Proxy{counts: map[string]int64{}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Peers run up to 32 requests at once; without enough idle
	// connections the proxy would dial per request and add its own cost.
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 256
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // signed by the client
		},
		Transport: tr,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode >= 400 {
				p.mu.Lock()
				p.errors++
				p.mu.Unlock()
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.mu.Lock()
			p.errors++
			p.mu.Unlock()
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.SetDelay(delay)
	return p, nil
}

// SetDelay sets the delay added to each request from now on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Delay returns the delay added to each request.
func (p *Proxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

// ServeHTTP counts, delays and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := Classify(r.Method, r.URL, r.Header)
	p.mu.Lock()
	p.counts[op]++
	p.mu.Unlock()
	if d := p.Delay(); d > 0 && backoff.Sleep(r.Context(), d) != nil {
		return
	}
	p.rp.ServeHTTP(w, r)
}

// Counts are the requests a proxy saw, per S3 operation.
type Counts struct {
	// Ops maps an operation name (see [Classify]) to its requests.
	Ops map[string]int64 `json:"ops"`
	// Errors is how many of them the server (or the proxy) answered
	// with a status of 400 or above.
	Errors int64 `json:"errors"`
}

// Total is the number of requests of every operation.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.Ops {
		n += v
	}
	return n
}

// Names returns the operations with a count, sorted.
func (c Counts) Names() []string {
	out := make([]string, 0, len(c.Ops))
	for k := range c.Ops {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Snapshot returns the counts so far.
func (p *Proxy) Snapshot() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Counts{Ops: maps.Clone(p.counts), Errors: p.errors}
}

// Reset sets every count to zero.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.counts)
	p.errors = 0
}
