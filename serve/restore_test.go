package serve

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/fs" // file:// buckets
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

func fileStore(t *testing.T) backend.Backend {
	t.Helper()
	store, err := backend.Open(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// Restore through the service puts back the copy a take-remote kept and
// marks it dirty, as the engine's Restore does in-process.
func TestClient_Restore_PutsBackTheKeptCopy(t *testing.T) {
	st := start(t, fileStore(t))
	write(t, st.dir, "data/x", "base")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	peer, err := syncer.Open(t.Context(), syncer.Config{Backend: st.store, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	conflicted(t, st, peer, "mine", "theirs")
	if _, err := st.client.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"data/x"}, Keep: syncer.TakeRemote}); err != nil {
		t.Fatal(err)
	}
	var cache Cache = st.client // the interface the CLI uses
	got, err := cache.Restore(t.Context(), "data/x")
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != "restore" || len(got.Changes) != 1 || got.Changes[0].Path != "data/x" || got.Changes[0].Action != syncer.ActionResolve {
		t.Fatalf("restore stats %+v, want one resolve change of data/x", got)
	}
	if body := read(t, st.dir, "data/x"); body != "mine" {
		t.Fatalf("data/x = %q after restore, want the kept local copy", body)
	}
	status, err := st.client.Status(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(status.Dirty, "data/x") {
		t.Fatalf("data/x not dirty after restore: %v", status.Dirty)
	}
	pushed, err := st.client.Push(t.Context(), syncer.PushOptions{Paths: []string{"data/x"}})
	if err != nil || pushed.Files.Uploaded != 1 || pushed.Files.Conflicts != 0 {
		t.Fatalf("push of the restored copy: %+v, %v", pushed.Files, err)
	}
}

// A restore with nothing kept, of a bad path, or with no path is refused
// with the engine's typed error, through the service as in-process.
func TestServer_Restore_BadRequestsAreTyped(t *testing.T) {
	st := start(t, fileStore(t))
	if _, err := st.client.Restore(t.Context(), "data/none"); !errors.Is(err, syncer.ErrNoBackup) {
		t.Errorf("restore data/none: err = %v, want ErrNoBackup", err)
	}
	if _, err := st.client.Restore(t.Context(), "../x"); !errors.Is(err, index.ErrInvalidPath) {
		t.Errorf("restore ../x: err = %v, want invalid_path", err)
	}
	for _, body := range []map[string]any{{}, {"paths": []string{}}, {"path": "data/x"}} {
		err := st.client.call(t.Context(), http.MethodPost, "/v1/restore", body, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("restore %+v: err = %v, want %s", body, err, CodeBadRequest)
		}
	}
}
