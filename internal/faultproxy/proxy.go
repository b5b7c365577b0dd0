package faultproxy

import (
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siltsync/silt/internal/backoff"
)

// Kind names one fault the proxy injects.
type Kind string

// The faults, in the order a request's draw is matched against their rates.
const (
	Status503   Kind = "503"
	Status429   Kind = "429"
	ResetBefore Kind = "reset-before"
	ResetAfter  Kind = "reset-after"
	Stall       Kind = "stall"
	Cut         Kind = "cut"
	Delay       Kind = "delay"
)

// Kinds lists every fault in draw order.
var Kinds = []Kind{Status503, Status429, ResetBefore, ResetAfter, Stall, Cut, Delay}

// Config configures a Proxy.
type Config struct {
	// Target is the server to forward to, "http://host:port".
	Target string
	// Rates maps a fault to the share of requests it is injected into,
	// each in [0, 1], summing to at most 1.
	Rates map[Kind]float64
	// Delay is how long a "delay" fault waits before forwarding; 0 means
	// 5 s.
	Delay time.Duration
	// StallFor bounds how long a "stall" holds a connection the client
	// keeps open; 0 means 2 minutes.
	StallFor time.Duration
	// Seed seeds the draws.
	Seed uint64
}

// Counts are what a proxy saw and did.
type Counts struct {
	// Requests is every request received.
	Requests int64 `json:"requests"`
	// Injected maps a fault to how many requests it was injected into.
	Injected map[Kind]int64 `json:"injected"`
}

// Total is the number of faults injected.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.Injected {
		n += v
	}
	return n
}

// String lists the counts in draw order: "requests 812: 503 160, reset-before 80".
func (c Counts) String() string {
	var parts []string
	for _, k := range Kinds {
		if n := c.Injected[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return fmt.Sprintf("requests %d: faults %d (%s)", c.Requests, c.Total(), strings.Join(parts, ", "))
}

// Proxy is an http.Handler that forwards to one server, injecting faults.
// It is safe for concurrent use.
type Proxy struct {
	cfg Config
	rp  *httputil.ReverseProxy

	mu       sync.Mutex
	rng      *rand.Rand
	requests int64
	injected map[Kind]int64
	enabled  bool
}

// New returns a proxy as cfg describes, with faults enabled.
func New(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q: want http://host:port", cfg.Target)
	}
	sum := 0.0
	for k, r := range cfg.Rates {
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("faultproxy: unknown fault %q (want one of %v)", k, Kinds)
		}
		if r < 0 || r > 1 {
			return nil, fmt.Errorf("faultproxy: rate of %s is %v, want 0 to 1", k, r)
		}
		sum += r
	}
	if sum > 1+1e-9 {
		return nil, fmt.Errorf("faultproxy: rates sum to %v, want at most 1 (one fault per request)", sum)
	}
	if cfg.Delay <= 0 {
		cfg.Delay = 5 * time.Second
	}
	if cfg.StallFor <= 0 {
		cfg.StallFor = 2 * time.Minute
	}
	cfg.Rates = maps.Clone(cfg.Rates)
	p := &Proxy{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), injected: map[Kind]int64{}, enabled: true}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // signed by the client
		},
		Transport: tr,
		ErrorLog:  log.New(io.Discard, "", 0), // aborted copies are the point
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p, nil
}

// SetEnabled turns fault injection on or off (forwarding goes on), so a
// test can prepare a bucket through the proxy without faults.
func (p *Proxy) SetEnabled(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enabled = on
}

// Counts returns the counts so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Counts{Requests: p.requests, Injected: maps.Clone(p.injected)}
}

// draw picks the fault for one request, or "".
func (p *Proxy) draw(r *http.Request) Kind {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	u := p.rng.Float64()
	if !p.enabled {
		return ""
	}
	acc := 0.0
	for _, k := range Kinds {
		acc += p.cfg.Rates[k]
		if u < acc {
			if k == Cut && r.Method != http.MethodGet {
				return ""
			}
			return k
		}
	}
	return ""
}

func (p *Proxy) count(k Kind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.injected[k]++
}

// ServeHTTP forwards one request, or fails it as its draw says.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := p.draw(r)
	switch k {
	case Status503:
		p.count(k)
		s3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case Status429:
		p.count(k)
		s3Error(w, http.StatusTooManyRequests, "TooManyRequests", "Please reduce your request rate.")
	case ResetBefore:
		p.count(k)
		reset(w)
	case ResetAfter:
		p.count(k)
		// Forward in full (the server applies the request), read the
		// answer, and drop it with the connection.
		p.rp.ServeHTTP(&discard{h: http.Header{}}, r)
		reset(w)
	case Stall:
		p.count(k)
		_ = backoff.Sleep(r.Context(), p.cfg.StallFor) // a stall ends either way
		reset(w)
	case Cut:
		cw := &cutWriter{ResponseWriter: w, p: p}
		p.rp.ServeHTTP(cw, r)
	case Delay:
		p.count(k)
		if backoff.Sleep(r.Context(), p.cfg.Delay) != nil {
			return
		}
		p.rp.ServeHTTP(w, r)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// s3Error answers as S3 does when it refuses a request.
func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Connection", "close") // the request body was not read
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// reset closes the client's connection with a TCP RST, as a peer that
// crashed or a middlebox that dropped the flow does.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // cannot hijack (HTTP/2): close as best we can
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
	conn.Close()
}

// discard is a ResponseWriter that drops the answer.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// cutWriter passes a GET's answer through until half its body is sent, then
// aborts the connection. An answer without a body to cut passes whole, and
// is not counted.
type cutWriter struct {
	http.ResponseWriter
	p     *Proxy
	left  int64 // bytes still to pass; -1: pass everything
	armed bool
}

func (c *cutWriter) WriteHeader(status int) {
	c.left = -1
	if n, err := strconv.ParseInt(c.Header().Get("Content-Length"), 10, 64); err == nil && n >= 2 && (status == http.StatusOK || status == http.StatusPartialContent) {
		c.left, c.armed = n/2, true
		c.p.count(Cut)
	}
	c.ResponseWriter.WriteHeader(status)
}

// errCut stops the proxy's copy of the body; ReverseProxy then aborts the
// connection (http.ErrAbortHandler), which the client sees as a body that
// ended early.
var errCut = fmt.Errorf("faultproxy: body cut")

func (c *cutWriter) Write(b []byte) (int, error) {
	if !c.armed {
		return c.ResponseWriter.Write(b)
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.ResponseWriter.Write(b)
	c.left -= int64(n)
	if err == nil && c.left == 0 {
		_ = http.NewResponseController(c.ResponseWriter).Flush()
		return n, errCut
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// ParseRates parses "503=0.2,reset-before=0.1,cut=0.1" into rates.
func ParseRates(s string) (map[Kind]float64, error) {
	out := map[Kind]float64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		r, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("faultproxy: rate %q: want fault=share, such as 503=0.2", part)
		}
		if !slices.Contains(Kinds, Kind(k)) {
			return nil, fmt.Errorf("faultproxy: unknown fault %q (want one of %v)", k, Kinds)
		}
		out[Kind(k)] = r
	}
	return out, nil
}
