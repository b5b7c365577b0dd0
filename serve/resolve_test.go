package serve

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/syncer"
)

// conflicted makes the served cache's push of data/x (as mine) conflict
// with the peer's (theirs), and checks the service reports the conflict.
func conflicted(t *testing.T, st *started, peer *syncer.Syncer, mine, theirs string) {
	t.Helper()
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, peer.Root(), "data/x", theirs)
	if _, err := peer.Push(t.Context(), syncer.PushOptions{Paths: []string{"data/x"}}); err != nil {
		t.Fatal(err)
	}
	write(t, st.dir, "data/x", mine)
	got, err := st.client.Push(t.Context(), syncer.PushOptions{Paths: []string{"data/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Files.Conflicts != 1 {
		t.Fatalf("push: %d conflicts, want 1: %+v", got.Files.Conflicts, got)
	}
	status, err := st.client.Status(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Conflicts) != 1 || status.Conflicts[0].Path != "data/x" {
		t.Fatalf("status conflicts %+v, want data/x", status.Conflicts)
	}
}

func read(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServer_Resolve_TakeRemoteThenKeepLocal(t *testing.T) {
	st := start(t, mem.New())
	write(t, st.dir, "data/x", "base")
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	peer, err := syncer.Open(t.Context(), syncer.Config{Backend: st.store, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()

	conflicted(t, st, peer, "mine 1", "theirs 1")
	if _, err := st.client.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"data/x"}, Keep: syncer.TakeRemote}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, st.dir, "data/x"); got != "theirs 1" {
		t.Fatalf("after keep remote data/x = %q, want the peer's copy", got)
	}
	if status, err := st.client.Status(t.Context(), false); err != nil || len(status.Conflicts) != 0 {
		t.Fatalf("conflicts left after resolve: %+v, %v", status.Conflicts, err)
	}

	conflicted(t, st, peer, "mine 2", "theirs 2")
	if _, err := st.client.Resolve(t.Context(), syncer.ResolveOptions{All: true, Keep: syncer.KeepLocal}); err != nil {
		t.Fatal(err)
	}
	pushed, err := st.client.Push(t.Context(), syncer.PushOptions{Paths: []string{"data/x"}})
	if err != nil || pushed.Files.Uploaded != 1 || pushed.Files.Conflicts != 0 {
		t.Fatalf("push after keep local: %+v, %v", pushed, err)
	}
	if _, err := peer.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, peer.Root(), "data/x"); got != "mine 2" {
		t.Fatalf("peer pulled data/x = %q, want the kept local copy", got)
	}
}

func TestServer_Resolve_BadRequestsAreTyped(t *testing.T) {
	st := start(t, mem.New())
	for _, body := range []map[string]any{
		{"paths": []string{"data/x"}},                   // no keep
		{"paths": []string{"data/x"}, "keep": "theirs"}, // unknown keep
		{"keep": "local"},                               // nothing to settle
	} {
		err := st.client.call(t.Context(), http.MethodPost, "/v1/resolve", body, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("resolve %+v: err = %v, want %s", body, err, CodeBadRequest)
		}
	}
	_, err := st.client.Resolve(t.Context(), syncer.ResolveOptions{Paths: []string{"../x"}, Keep: syncer.KeepLocal})
	if !errors.Is(err, index.ErrInvalidPath) {
		t.Errorf("resolve ../x: err = %v, want invalid_path", err)
	}
}
