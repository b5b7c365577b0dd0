package serve

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// Config configures a Server.
type Config struct {
	// Syncer is how the served cache is opened (Open), or describes the
	// Syncer given to New.
	Syncer syncer.Config
	// Token, when set, is the bearer token every request on a TCP listener
	// must carry. The Unix socket is guarded by its file permissions and
	// needs none. A TCP listener without a token is refused.
	Token string
	// JobRetention is how long a finished job stays visible at
	// /v1/jobs/{id}; zero means DefaultJobRetention.
	JobRetention time.Duration
	// Owner is what /v1/info reports as the cache's owner; empty means
	// "silt serve".
	Owner string
}

// DefaultJobRetention is how long a finished job is kept by default.
const DefaultJobRetention = 10 * time.Minute

// Server owns one cache directory: it holds the Syncer, opened once, and
// serves its operations over the JSON API. One request is one operation,
// and the server adds no lock of its own: requests run as concurrently as
// the Syncer allows.
type Server struct {
	cfg  Config
	sync *syncer.Syncer
	root backend.Backend // namespace root, where lock objects live
	mux  *http.ServeMux

	ownSyncer bool // Open opened it: Shutdown closes it

	base   context.Context // parent of async jobs; cancelled at shutdown
	cancel context.CancelFunc

	mu      sync.Mutex
	closing bool
	https   []*http.Server
	jobs    jobTable
	leases  map[string]*heldLease
	running sync.WaitGroup // async jobs
	host    hostState      // events, remote watch, idle tracking (events.go)
	held    index.Head     // a bucket service's last read head (health.go)
}

// Open opens the cache described by cfg.Syncer and returns a server for it.
// Another process holding the cache makes it fail with syncer.ErrBusy.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	sy, err := syncer.Open(ctx, cfg.Syncer)
	if err != nil {
		return nil, err
	}
	s := New(ctx, sy, cfg)
	s.ownSyncer = true
	return s, nil
}

// New returns a server for a Syncer the caller opened (cfg.Syncer
// describes it: its Backend, Dir and Namespace). Shutdown does not close
// it: a process that owns a cache serves it while it runs this way (see
// OpenCache). Operations see their own progress and changes through the
// context (syncer.WithObserver), so the Syncer's Config callbacks are the
// owner's alone.
func New(ctx context.Context, sy *syncer.Syncer, cfg Config) *Server {
	if cfg.JobRetention <= 0 {
		cfg.JobRetention = DefaultJobRetention
	}
	s := &Server{cfg: cfg, leases: map[string]*heldLease{}, sync: sy}
	s.jobs.init(cfg.JobRetention)
	s.host.init()
	sc := cfg.Syncer
	s.root = sc.Backend
	if sc.Namespace != "" {
		s.root = backend.Prefixed(sc.Backend, sc.Namespace)
	}
	s.base, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.host.seenSeq = sy.SeenSeq()
	s.routes()
	return s
}

// Syncer returns the served Syncer.
func (s *Server) Syncer() *syncer.Syncer { return s.sync }

// Handler returns the API handler, without the token check that Serve
// adds on TCP listeners.
func (s *Server) Handler() http.Handler { return limitBody(s.mux) }

// Serve answers requests on ln until Shutdown. A non-Unix listener
// requires Config.Token.
func (s *Server) Serve(ln net.Listener) error {
	h := s.track(s.Handler())
	if ln.Addr().Network() == "unix" {
		ln = peerChecked(ln)
	} else {
		if s.cfg.Token == "" {
			return errors.New("serve: a TCP listener needs a bearer token")
		}
		if err := CheckToken(s.cfg.Token); err != nil {
			return err
		}
		h = requireToken(s.cfg.Token, h)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.https = append(s.https, hs)
	s.mu.Unlock()
	return hs.Serve(ln)
}

func requireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeJSON(w, http.StatusUnauthorized, errorBody{&Error{Code: CodeUnauthorized, Message: "missing or wrong bearer token"}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Shutdown stops accepting requests, lets running requests and jobs finish
// until ctx is done, then cancels what still runs, releases the locks the
// service holds for clients and closes the Syncer. Listeners are closed,
// which removes a Unix socket.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	https := s.https
	s.mu.Unlock()
	s.host.stop() // long polls and the remote watcher end now
	var errs []error
	for _, hs := range https {
		if err := hs.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			hs.Close()
		}
	}
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
	errs = append(errs, s.releaseAll(context.WithoutCancel(ctx)))
	if s.ownSyncer {
		errs = append(errs, s.sync.Close())
	}
	return errors.Join(errs...)
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/info", s.handleInfo)
	m.HandleFunc("POST /v1/pull", s.handlePull)
	m.HandleFunc("POST /v1/push", s.handlePush)
	m.HandleFunc("POST /v1/prepare", s.handlePrepare)
	m.HandleFunc("POST /v1/commit", s.handleCommit)
	m.HandleFunc("POST /v1/dirty", s.handleDirty)
	m.HandleFunc("POST /v1/status", s.handleStatus)
	m.HandleFunc("POST /v1/preview", s.handlePreview)
	m.HandleFunc("POST /v1/hydrate", s.handleHydrate)
	m.HandleFunc("POST /v1/resolve", s.handleResolve)
	m.HandleFunc("POST /v1/restore", s.handleRestore)
	m.HandleFunc("POST /v1/migrate", s.handleMigrate)
	m.HandleFunc("POST /v1/watch", s.handleWatch)
	s.lockRoutes(m) // bucket.go: shared with the bucket service
	s.hostRoutes(m)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: no endpoint %s %s", errNotFound, r.Method, r.URL.Path))
	})
	s.mux = m
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	owner := s.cfg.Owner
	if owner == "" {
		owner = "silt serve"
	}
	writeJSON(w, http.StatusOK, Info{API: APIVersion, Dir: s.cfg.Syncer.Dir, Root: s.sync.Root(),
		Namespace: s.cfg.Syncer.Namespace, PID: os.Getpid(), Owner: owner})
}

// maxBody bounds a request body (a prepared manifest can be large); a
// longer one is refused with 413, never cut and run. A variable for tests.
var maxBody int64 = 64 << 20

// limitBody bounds every request's body to maxBody.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		next.ServeHTTP(w, r)
	})
}

// decode reads the request body into v; an empty body leaves v zero. A
// body past maxBody is errTooLarge, anything after the one JSON value a
// bad request.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		var rest json.RawMessage
		if err = dec.Decode(&rest); err == nil {
			return badRequest("request body: data after the JSON value")
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Errorf("%w: request body over %d bytes", errTooLarge, maxBody)
	case errors.Is(err, io.EOF):
		return nil
	}
	return badRequest("request body: %v", err)
}

// run executes one operation: at once on the request's context, or, with
// async, as a job on the server's context, answering 202 with the job.
// kind is kept for callers; progress goes to the job through the context.
func (s *Server) run(w http.ResponseWriter, r *http.Request, op, kind string, async bool, fn func(ctx context.Context) (any, error)) {
	s.runCall(w, r, op, async, CallOptions{}, fn)
}

// runCall is run with the request's CallOptions: a synchronous call with
// Stream set answers with its events as they happen, then its result.
func (s *Server) runCall(w http.ResponseWriter, r *http.Request, op string, async bool, co CallOptions, fn func(ctx context.Context) (any, error)) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		writeError(w, errUnavailable)
		return
	}
	parent := r.Context()
	if async {
		parent = s.base
		s.running.Add(1)
	}
	j, ctx := s.jobs.start(parent, op, op)
	s.mu.Unlock()
	var st *streamer
	if co.Stream && !async {
		st = newStreamer(w)
	}
	obs := co.observer(st.emitter())
	own := obs.Progress
	obs.Progress = func(p syncer.Progress) {
		s.jobs.progressOf(j, p)
		s.publishProgress(p)
		if own != nil {
			own(p)
		}
	}
	ctx = syncer.WithObserver(ctx, obs)
	s.opStarted(j)
	if async {
		go func() {
			defer s.running.Done()
			res, err := fn(ctx)
			s.jobs.finish(j, res, err)
			s.opEnded(j, res, err)
		}()
		writeJSON(w, http.StatusAccepted, s.jobs.snapshot(j))
		return
	}
	res, err := fn(ctx)
	s.jobs.finish(j, res, err)
	s.opEnded(j, res, err)
	if st != nil {
		st.end(res, err)
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// writeJSON writes v with a Content-Length, so minimal HTTP clients can
// read the reply without chunked decoding.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errorBody{&Error{Code: CodeInternal, Message: err.Error()}})
	}
	data = append(data, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data) // the client went away; nothing to tell it
}

func writeError(w http.ResponseWriter, err error) {
	e, status := toError(err)
	writeJSON(w, status, errorBody{e})
}
