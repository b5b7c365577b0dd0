package conformance

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/serve"
)

// RunSyncerModelServed runs the model-based test with every cache driven
// through silt serve, as hosts and a second CLI process reach a cache: a
// real serve.Server on the cache's Unix socket, called through
// serve.Client. The oracle checks the same properties as RunSyncerModel,
// so what the engine keeps is checked where hosts use it, the service's
// wire and its error mapping included. It runs the Owned, Shared and
// Concurrent modes.
func RunSyncerModelServed(t *testing.T, newBackend Factory, budget ModelBudget) {
	for _, name := range []string{"Owned", "Shared", "Concurrent"} {
		t.Run(name, func(t *testing.T) {
			runModel(t, func() backend.Backend { return newBackend(t) }, name == "Shared", name == "Concurrent", true, budget)
		})
	}
	f := Figures()
	t.Logf("model totals in this process: %d sequences, %d steps, %d faults armed, %d fired; %s", f.Sequences, f.Steps, f.Faults, f.FaultsFired, concTotals())
}

// openServed opens c's cache in a service on its socket and makes c.s a
// client of it.
func (m *modelRun) openServed(c *mcache) {
	srv, err := serve.Open(m.ctx, serve.Config{Syncer: c.cfg})
	if err != nil {
		m.t.Fatalf("serve cache %d: %v", c.id, err)
	}
	ln, err := serve.Listen(m.ctx, c.dir)
	if err != nil {
		srv.Shutdown(m.ctx)
		m.t.Fatalf("listen for cache %d: %v", c.id, err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	cl, err := serve.Dial(m.ctx, c.dir)
	if err != nil {
		srv.Shutdown(m.ctx)
		m.t.Fatalf("dial cache %d: %v", c.id, err)
	}
	c.s = &servedCache{Client: cl, srv: srv, done: done}
}

// servedCache is a client whose Close also stops its service (and closes
// the Syncer), as a crash or restart of the model closes a cache.
type servedCache struct {
	*serve.Client
	srv  *serve.Server
	done chan error
}

func (s *servedCache) Close() error {
	s.Client.Close()
	err := s.srv.Shutdown(context.Background())
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
