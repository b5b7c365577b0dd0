package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/syncer"
)

func (s *Server) handlePull(w http.ResponseWriter, r *http.Request) {
	var req PullRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "pull", "pull", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.Pull(ctx, syncer.PullOptions{Scope: req.Scope, MetadataOnly: req.MetadataOnly})
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

func pushOptions(req PushRequest) (syncer.PushOptions, error) {
	if req.MaxDelete < 0 {
		return syncer.PushOptions{}, badRequest("maxDelete must not be negative (0: no limit)")
	}
	return syncer.PushOptions{MaxDelete: req.MaxDelete, DryRun: req.DryRun, Fence: req.Fence, All: req.All, Paths: req.Paths}, nil
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) {
	var req PushRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	opts, err := pushOptions(req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "push", "push", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.Push(ctx, opts)
	})
}

func (s *Server) handlePrepare(w http.ResponseWriter, r *http.Request) {
	var req PushRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	opts, err := pushOptions(req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "prepare", "prepare", req.Async, func(ctx context.Context) (any, error) {
		m, st, err := s.sync.PreparePush(ctx, opts)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return PrepareResponse{Manifest: data, Files: m.Files(), Stats: st}, nil
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
	s.run(w, r, "commit", "commit", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.CommitPush(ctx, &m, req.Fence)
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
	s.run(w, r, "hydrate", "hydrate", req.Async, func(ctx context.Context) (any, error) {
		out := HydrateResponse{Found: make([]bool, 0, len(req.Paths)), Stats: syncer.Stats{Op: "hydrate", Phases: []syncer.Phase{}}}
		for _, p := range req.Paths {
			ok, st, err := s.sync.HydrateFile(ctx, p)
			out.Stats = addStats(out.Stats, st)
			if err != nil {
				return nil, err
			}
			out.Found = append(out.Found, ok)
		}
		return out, nil
	})
}

func (s *Server) handleResolve(w http.ResponseWriter, r *http.Request) {
	var req ResolveRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	opts := syncer.ResolveOptions{Paths: req.Paths, All: req.All}
	switch req.Keep {
	case KeepLocal:
		opts.Keep = syncer.KeepLocal
	case KeepRemote:
		opts.Keep = syncer.TakeRemote
	default:
		writeError(w, badRequest("resolve: keep must be %q or %q, not %q", KeepLocal, KeepRemote, req.Keep))
		return
	}
	if len(req.Paths) == 0 && !req.All {
		writeError(w, badRequest("resolve: give paths, or all"))
		return
	}
	s.run(w, r, "resolve", "resolve", req.Async, func(ctx context.Context) (any, error) {
		return s.sync.Resolve(ctx, opts)
	})
}

// addStats sums b into a, for an endpoint that runs several calls.
func addStats(a, b syncer.Stats) syncer.Stats {
	a.Files.Downloaded += b.Files.Downloaded
	a.Files.Unchanged += b.Files.Unchanged
	a.Bytes.Down += b.Bytes.Down
	a.Bytes.Up += b.Bytes.Up
	a.Requests.Get += b.Requests.Get
	a.Requests.Put += b.Requests.Put
	a.Requests.List += b.Requests.List
	a.Requests.Delete += b.Requests.Delete
	a.Requests.Stat += b.Requests.Stat
	a.Local.Examined += b.Local.Examined
	a.Phases = append(a.Phases, b.Phases...)
	a.Ms += b.Ms
	a.Seq = max(a.Seq, b.Seq)
	return a
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
	if verb != "list" {
		if err := backend.ValidateKey(req.Key); err != nil {
			writeError(w, badRequest("control key: %v", err))
			return
		}
	}
	c := syncer.NewControl(s.root) // as Syncer.Control, and without a cache for a bucket service
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
