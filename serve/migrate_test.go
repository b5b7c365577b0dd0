package serve

import (
	"errors"
	"testing"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/legacy"
	"github.com/siltsync/silt/syncer"
)

// POST /v1/migrate migrates the service's bucket online, as silt migrate
// does; a dry run writes nothing, and the service goes on pushing.
func TestServer_Migrate_DryRunThenMigrateThenPush(t *testing.T) {
	store := mem.New()
	// A bucket of format 3, made by an older silt.
	if _, err := legacy.Push(t.Context(), store, index.FormatVersion, map[string][]byte{"data/t/a": []byte("one")}); err != nil {
		t.Fatal(err)
	}
	st := start(t, store)
	push := func(p, body string) {
		t.Helper()
		write(t, st.dir, p, body)
		if err := st.client.MarkPaths(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		if _, err := st.client.Push(t.Context(), syncer.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	head := func() index.Manifest {
		t.Helper()
		h, err := index.ReadHead(t.Context(), st.store, nil)
		if err != nil {
			t.Fatal(err)
		}
		return *h.Manifest
	}
	if _, err := st.client.Pull(t.Context(), syncer.PullOptions{}); err != nil {
		t.Fatal(err)
	}
	before := head()
	// Before the migration a push is refused, by a code a host branches on.
	write(t, st.dir, "data/t/early", "refused")
	if err := st.client.MarkPaths(t.Context(), "data/t/early"); err != nil {
		t.Fatal(err)
	}
	var se *Error
	if _, err := st.client.Push(t.Context(), syncer.PushOptions{}); !errors.Is(err, index.ErrMigrateRequired) || !errors.As(err, &se) || se.Code != CodeMigrate {
		t.Fatalf("push to a format-3 bucket through the service: %v", err)
	}
	if m := head(); m.Seq != before.Seq {
		t.Fatalf("a refused push moved the head to seq %d", m.Seq)
	}

	dry, err := st.client.Migrate(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || len(dry.Writes) == 0 || dry.Entries != 1 {
		t.Errorf("dry run = %+v, want the writes named and 1 entry", dry)
	}
	if m := head(); m.Format != before.Format || m.Seq != before.Seq {
		t.Fatalf("a dry run moved the head to format %d seq %d", m.Format, m.Seq)
	}
	rep, err := st.client.Migrate(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.To != index.DefaultFormat || rep.Seq != before.Seq+1 {
		t.Errorf("migrate = %+v, want format %d at seq %d", rep, index.DefaultFormat, before.Seq+1)
	}
	push("data/t/b", "two")
	if m := head(); m.Format != index.DefaultFormat || m.Seq != before.Seq+2 {
		t.Errorf("push after the migration made format %d seq %d, want %d seq %d", m.Format, m.Seq, index.DefaultFormat, before.Seq+2)
	}
}
