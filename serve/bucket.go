package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/namespace"
	"github.com/siltsync/silt/syncer"
)

// BucketConfig configures a bucket service: locks, the control plane,
// the health check, namespaces, cross-namespace reads and the remote
// watch of one bucket (namespace), without a cache directory. A host runs
// it for what needs the bucket and not a cache: its global and per-model
// locks, its verifier.
type BucketConfig struct {
	Backend   backend.Backend
	Namespace string
	// Token as Config.Token: required on a TCP listener.
	Token string
}

// OpenBucket returns a bucket service for cfg. It does no I/O.
func OpenBucket(ctx context.Context, cfg BucketConfig) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("serve: OpenBucket needs a backend")
	}
	if cfg.Namespace != "" {
		if err := namespace.Validate(cfg.Namespace); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: Config{Syncer: syncer.Config{Backend: cfg.Backend, Namespace: cfg.Namespace}, Token: cfg.Token,
		JobRetention: DefaultJobRetention}, leases: map[string]*heldLease{}}
	s.jobs.init(DefaultJobRetention)
	s.host.init()
	s.root = cfg.Backend
	if cfg.Namespace != "" {
		s.root = backend.Prefixed(cfg.Backend, cfg.Namespace)
	}
	s.base, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/info", s.handleBucketInfo)
	s.hostRoutes(m)
	s.lockRoutes(m)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: no endpoint %s %s on a bucket service (no cache directory)", errNotFound, r.Method, r.URL.Path))
	})
	s.mux = m
	return s, nil
}

// hostRoutes registers the endpoints of this file's siblings (events,
// health, namespaces, read), served by cache and bucket services alike.
func (s *Server) hostRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/health", s.handleHealth)
	m.HandleFunc("POST /v1/events", s.handleEvents)
	m.HandleFunc("POST /v1/namespaces", s.handleNamespaces)
	m.HandleFunc("POST /v1/namespaces/register", s.handleNamespaceRegister)
	m.HandleFunc("POST /v1/read", s.handleRead)
}

// lockRoutes registers the lock, control-plane and job endpoints, which
// need the bucket but no cache.
func (s *Server) lockRoutes(m *http.ServeMux) {
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
}

func (s *Server) handleBucketInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Info{API: APIVersion, Namespace: s.cfg.Syncer.Namespace, PID: os.Getpid(), Mode: ModeBucket})
}

// Service modes of Info.Mode.
const (
	ModeCache  = "" // a cache directory's service
	ModeBucket = "bucket"
)

// ListenAt creates a Unix socket at path for a bucket service, whose path
// the client chooses (there is no cache directory to hold it). The
// socket's directory is created private (0700) when missing and must not
// be writable by others, so nobody else can put a socket there; the
// socket is 0600. A socket a live service answers on is refused with
// ErrServed; a stale one is replaced.
func ListenAt(ctx context.Context, path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("serve: socket directory %s is writable by others (%v); use a private directory", dir, fi.Mode().Perm())
	}
	return listenPrivate(ctx, path)
}
