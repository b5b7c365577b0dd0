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
	"github.com/siltsync/silt/syncer"
)

// Config configures a Server.
type Config struct {
	// Syncer is how the served cache is opened. Its Progress is replaced:
	// the server routes progress to its jobs.
	Syncer syncer.Config
	// Token, when set, is the bearer token every request on a TCP listener
	// must carry. The Unix socket is guarded by its file permissions and
	// needs none. A TCP listener without a token is refused.
	Token string
	// JobRetention is how long a finished job stays visible at
	// /v1/jobs/{id}; zero means DefaultJobRetention.
	JobRetention time.Duration
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

	base   context.Context // parent of async jobs; cancelled at shutdown
	cancel context.CancelFunc

	mu      sync.Mutex
	closing bool
	https   []*http.Server
	jobs    jobTable
	leases  map[string]*heldLease
	running sync.WaitGroup // async jobs
	host    hostState      // events, remote watch, idle tracking (events.go)
}

// Open opens the cache described by cfg.Syncer and returns a server for it.
// Another process holding the cache makes it fail with syncer.ErrBusy.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.JobRetention <= 0 {
		cfg.JobRetention = DefaultJobRetention
	}
	s := &Server{cfg: cfg, leases: map[string]*heldLease{}}
	s.jobs.init(cfg.JobRetention)
	s.host.init()
	sc := cfg.Syncer
	sc.Progress = s.progress
	sy, err := syncer.Open(ctx, sc)
	if err != nil {
		return nil, err
	}
	s.sync = sy
	s.root = sc.Backend
	if sc.Namespace != "" {
		s.root = backend.Prefixed(sc.Backend, sc.Namespace)
	}
	s.base, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if st, err := sy.Status(ctx, false); err == nil {
		s.host.seenSeq = st.SeenSeq
	}
	s.routes()
	return s, nil
}

// Syncer returns the served Syncer.
func (s *Server) Syncer() *syncer.Syncer { return s.sync }

// Handler returns the API handler, without the token check that Serve
// adds on TCP listeners.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve answers requests on ln until Shutdown. A non-Unix listener
// requires Config.Token.
func (s *Server) Serve(ln net.Listener) error {
	h := s.track(s.mux)
	if ln.Addr().Network() != "unix" {
		if s.cfg.Token == "" {
			return errors.New("serve: a TCP listener needs a bearer token")
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
	if s.sync != nil { // nil for a bucket service
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
	m.HandleFunc("POST /v1/lock/acquire", s.lockHandler("lock/acquire", true, s.lockAcquire))
	m.HandleFunc("POST /v1/lock/inspect", s.lockHandler("lock/inspect", false, lockInspect))
	m.HandleFunc("POST /v1/lock/force-release", s.lockHandler("lock/force-release", false, lockForceRelease))
	m.HandleFunc("POST /v1/lock/release", s.leaseHandler("lock/release", true, s.lockRelease))
	m.HandleFunc("POST /v1/lock/heartbeat", s.leaseHandler("lock/heartbeat", false, s.lockHeartbeat))
	m.HandleFunc("POST /v1/control/get", s.handleControl)
	m.HandleFunc("POST /v1/control/put", s.handleControl)
	m.HandleFunc("POST /v1/control/put-if-absent", s.handleControl)
	m.HandleFunc("POST /v1/control/delete", s.handleControl)
	m.HandleFunc("POST /v1/control/list", s.handleControl)
	m.HandleFunc("GET /v1/jobs", s.handleJobs)
	m.HandleFunc("GET /v1/jobs/{id}", s.handleJob)
	m.HandleFunc("POST /v1/jobs/{id}/cancel", s.handleJobCancel)
	s.hostRoutes(m)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: no endpoint %s %s", errNotFound, r.Method, r.URL.Path))
	})
	s.mux = m
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Info{API: APIVersion, Dir: s.cfg.Syncer.Dir, Root: s.sync.Root(),
		Namespace: s.cfg.Syncer.Namespace, PID: os.Getpid()})
}

// maxBody bounds a request body (a prepared manifest can be large).
const maxBody = 64 << 20

// decode reads the request body into v; an empty body leaves v zero.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return badRequest("request body: %v", err)
	}
	return nil
}

// run executes one operation: at once on the request's context, or, with
// async, as a job on the server's context, answering 202 with the job.
func (s *Server) run(w http.ResponseWriter, r *http.Request, op, kind string, async bool, fn func(ctx context.Context) (any, error)) {
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
	j, ctx := s.jobs.start(parent, op, kind)
	s.mu.Unlock()
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
