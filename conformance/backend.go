package conformance

import (
	"testing"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/conformance/check"
)

// Factory returns a fresh, empty backend for one subtest; the suite closes it
// with t.Cleanup. It may call t.Skip (say, when credentials are missing) or
// t.Fatal (when setup fails); both stop only that subtest.
type Factory func(t *testing.T) backend.Backend

// RunBackend runs every backend check ([check.All]) as a subtest of t, each
// on a fresh backend from newBackend, seen through [backend.Portable] as
// users see it (backend.Open puts that layer over every driver): the checks
// of keys, conditions, contexts and page sizes are the portable layer's, so
// they hold alike on every store, and the store's own behaviour is the
// rest. `silt conformance` runs the same checks through [check.RunLive].
//
// Checks run one after another, never in parallel: a real store's rate
// limits and an emulator's single process are shared by all of them, and a
// failure is easier to read when nothing else was running.
func RunBackend(t *testing.T, newBackend Factory) {
	t.Helper()
	for _, c := range check.All() {
		t.Run(c.Name, func(t *testing.T) {
			b := newBackend(t)
			if b == nil {
				t.Fatal("conformance: Factory returned a nil backend")
			}
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			c.Run(t, backend.Portable(b))
		})
	}
}
