package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/namespace"
)

// NamespaceRequest is the body of POST /v1/namespaces/register.
type NamespaceRequest struct {
	Namespace string `json:"namespace"`
	Owner     string `json:"owner"`
}

// NamespacesResponse is the result of POST /v1/namespaces.
type NamespacesResponse struct {
	Namespaces []namespace.Info `json:"namespaces"`
}

// ReadRequest is the body of POST /v1/read: one committed file of a
// namespace of the bucket (the served one when Namespace is nil), read
// from the index without touching the cache. A host reads other
// namespaces' catalogs this way.
type ReadRequest struct {
	Namespace *string `json:"namespace,omitempty"`
	Path      string  `json:"path"`
}

// ReadResponse is the result of POST /v1/read; Found is false when the
// path has no committed entry.
type ReadResponse struct {
	Found  bool   `json:"found"`
	Data   []byte `json:"data,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Seq    uint64 `json:"seq"`
}

// bucket is the whole bucket the service's namespace lives in.
func (s *Server) bucket() backend.Backend { return s.cfg.Syncer.Backend }

func (s *Server) handleNamespaces(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, "namespaces", "namespaces", false, func(ctx context.Context) (any, error) {
		ns, err := namespace.List(ctx, s.bucket())
		if ns == nil {
			ns = []namespace.Info{}
		}
		return NamespacesResponse{Namespaces: ns}, err
	})
}

func (s *Server) handleNamespaceRegister(w http.ResponseWriter, r *http.Request) {
	var req NamespaceRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := namespace.Validate(req.Namespace); err != nil {
		writeError(w, badRequest("namespace: %v", err))
		return
	}
	if req.Owner == "" {
		writeError(w, badRequest("namespace register needs an owner"))
		return
	}
	s.run(w, r, "namespaces/register", "namespaces", false, func(ctx context.Context) (any, error) {
		return struct{}{}, namespace.Register(ctx, s.bucket(), req.Namespace, req.Owner)
	})
}

// maxRead bounds what /v1/read returns in one JSON reply.
const maxRead = 32 << 20

func (s *Server) handleRead(w http.ResponseWriter, r *http.Request) {
	var req ReadRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	root := s.root
	if req.Namespace != nil {
		if *req.Namespace == "" {
			root = s.bucket()
		} else if err := namespace.Validate(*req.Namespace); err != nil {
			writeError(w, badRequest("namespace: %v", err))
			return
		} else {
			root = backend.Prefixed(s.bucket(), *req.Namespace)
		}
	}
	if err := backend.ValidateKey(req.Path); err != nil {
		writeError(w, fmt.Errorf("%w: %v", index.ErrInvalidPath, err))
		return
	}
	s.run(w, r, "read", "read", false, func(ctx context.Context) (any, error) {
		snap, err := index.OpenSnapshot(ctx, root)
		if err != nil {
			return nil, err
		}
		e, ok, err := snap.Lookup(ctx, req.Path)
		if err != nil || !ok {
			return ReadResponse{Seq: snap.Seq()}, err
		}
		if e.Size > maxRead {
			return nil, badRequest("read %s: %d bytes is over the %d a reply carries", req.Path, e.Size, maxRead)
		}
		rc, err := index.Open(ctx, root, req.Path, e)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, e.Size+1))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != e.Size || hex.EncodeToString(sum[:]) != e.SHA256 {
			return nil, fmt.Errorf("read %s: %w: %d bytes with sha256 %x, the index says %d with %s",
				req.Path, index.ErrCorruptObject, len(data), sum, e.Size, e.SHA256)
		}
		return ReadResponse{Found: true, Data: data, Size: e.Size, SHA256: e.SHA256, Seq: snap.Seq()}, nil
	})
}
