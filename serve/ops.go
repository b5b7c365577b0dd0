package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/control"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

func (s *Server) handlePull(w http.ResponseWriter, r *http.Request) {
	var req PullRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if _, err := syncer.LazyGlobs(req.Lazy...); err != nil {
		writeError(w, badRequest("lazy: %v", err))
		return
	}
	s.runCall(w, r, "pull", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		st, err := s.sync.Pull(ctx, req.PullOptions)
		return wireStats(st), err
	})
}

// markPaths marks the paths a push names, as `silt push --path` does.
func (s *Server) markPaths(paths []string) error {
	for _, p := range paths {
		if err := s.sync.MarkDirty(p); err != nil {
			return err
		}
	}
	return nil
}

func checkPush(o syncer.PushOptions) error {
	if o.MaxDelete < 0 {
		return badRequest("maxDelete must not be negative (0: no limit)")
	}
	if o.Fence != nil {
		if err := backend.ValidateKey(o.Fence.Key); err != nil {
			return badRequest("fence key: %v", err)
		}
	}
	return nil
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) {
	var req PushRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkPush(req.PushOptions); err != nil {
		writeError(w, err)
		return
	}
	s.runCall(w, r, "push", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		st, err := s.sync.Push(ctx, req.PushOptions)
		return wireStats(st), err
	})
}

func (s *Server) handlePrepare(w http.ResponseWriter, r *http.Request) {
	var req PushRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkPush(req.PushOptions); err != nil {
		writeError(w, err)
		return
	}
	s.runCall(w, r, "prepare", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		m, st, err := s.sync.PreparePush(ctx, req.PushOptions)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return PrepareResponse{Manifest: data, Files: m.Files(), Stats: wireStats(st)}, nil
	})
}

func (s *Server) handleCommit(w http.ResponseWriter, r *http.Request) {
	var req CommitRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	var m syncer.PushManifest
	if err := json.Unmarshal(req.Manifest, &m); err != nil {
		writeError(w, badRequest("manifest: %v", err))
		return
	}
	if err := checkPush(syncer.PushOptions{Fence: req.Fence}); err != nil {
		writeError(w, err)
		return
	}
	s.runCall(w, r, "commit", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		st, err := s.sync.CommitPush(ctx, &m, req.Fence)
		return wireStats(st), err
	})
}

func (s *Server) handleDirty(w http.ResponseWriter, r *http.Request) {
	var req DirtyRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if !req.All && len(req.Paths) == 0 {
		writeError(w, badRequest("dirty: give paths, or all"))
		return
	}
	s.run(w, r, "dirty", "dirty", false, func(ctx context.Context) (any, error) {
		if req.All {
			if err := s.sync.MarkAllDirty(); err != nil {
				return nil, err
			}
		}
		if err := s.markPaths(req.Paths); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	})
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	var req StatusRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "status", "status", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.Status(ctx, req.Remote)
	})
}

func (s *Server) handlePreview(w http.ResponseWriter, r *http.Request) {
	var req AsyncOption
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "preview", "preview", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.PreviewPush(ctx)
	})
}

func (s *Server) handleMigrate(w http.ResponseWriter, r *http.Request) {
	var req MigrateRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "migrate", "migrate", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.Migrate(ctx, index.MigrateOptions{DryRun: req.DryRun})
	})
}

func (s *Server) handleHydrate(w http.ResponseWriter, r *http.Request) {
	var req HydrateRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Paths) == 0 {
		writeError(w, badRequest("hydrate: no paths"))
		return
	}
	s.runCall(w, r, "hydrate", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		total := syncer.Stats{Op: "hydrate", Phases: []syncer.Phase{}}
		found := make([]bool, 0, len(req.Paths))
		for _, p := range req.Paths {
			ok, st, err := s.sync.HydrateFile(ctx, p)
			total = total.Add(st)
			if err != nil {
				return nil, err
			}
			found = append(found, ok)
		}
		return HydrateResponse{Found: found, Stats: wireStats(total)}, nil
	})
}

func (s *Server) handleResolve(w http.ResponseWriter, r *http.Request) {
	var req ResolveRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Keep != syncer.KeepLocal && req.Keep != syncer.TakeRemote {
		writeError(w, badRequest("resolve: keep must be \"local\" or \"remote\""))
		return
	}
	if len(req.Paths) == 0 && !req.All {
		writeError(w, badRequest("resolve: give paths, or all"))
		return
	}
	s.runCall(w, r, "resolve", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		st, err := s.sync.Resolve(ctx, req.ResolveOptions)
		return wireStats(st), err
	})
}

func (s *Server) handleRestore(w http.ResponseWriter, r *http.Request) {
	var req RestoreRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Paths) == 0 {
		writeError(w, badRequest("restore: no paths"))
		return
	}
	s.runCall(w, r, "restore", req.Async, req.CallOptions, func(ctx context.Context) (any, error) {
		total := syncer.Stats{Op: "restore", Phases: []syncer.Phase{}}
		for _, p := range req.Paths {
			st, err := s.sync.Restore(ctx, p)
			total = total.Add(st)
			if err != nil {
				return wireStats(total), err
			}
		}
		return wireStats(total), nil
	})
}

// handleControl serves the control-plane store: get, put, put-if-absent,
// delete and list, by the last element of the path.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	var req ControlRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	verb := path.Base(r.URL.Path)
	if err := checkControl(verb, req); err != nil {
		writeError(w, err)
		return
	}
	c := control.New(s.root) // the namespace root: a bucket service has no cache
	s.run(w, r, "control/"+verb, "control", false, func(ctx context.Context) (any, error) {
		switch verb {
		case "get":
			data, err := c.Get(ctx, req.Key)
			if err != nil {
				return nil, err
			}
			if data == nil {
				data = []byte{}
			}
			return ControlResponse{Data: data}, nil
		case "put":
			return struct{}{}, c.Put(ctx, req.Key, req.Data)
		case "put-if-absent":
			ok, err := c.PutIfAbsent(ctx, req.Key, req.Data)
			return ControlResponse{Created: &ok}, err
		case "delete":
			return struct{}{}, c.Delete(ctx, req.Key)
		case "list":
			keys, err := c.List(ctx, req.Prefix)
			if keys == nil {
				keys = []string{}
			}
			return map[string][]string{"keys": keys}, err
		}
		return nil, errors.New("serve: unknown control verb " + verb)
	})
}

// checkControl refuses a bad key or prefix before the store sees it, so
// every one is a 400, never the store's error.
func checkControl(verb string, req ControlRequest) error {
	if verb != "list" {
		if err := backend.ValidateKey(req.Key); err != nil {
			return badRequest("control key: %v", err)
		}
		return nil
	}
	if req.Key != "" {
		return badRequest("control list: give prefix, not key")
	}
	if p := strings.TrimSuffix(req.Prefix, "/"); p != "" {
		if err := backend.ValidateKey(p); err != nil {
			return badRequest("control prefix: %v", err)
		}
	}
	return nil
}
