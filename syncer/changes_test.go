package syncer_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/siltsync/silt/backend/mem"
	"github.com/siltsync/silt/syncer"
)

func TestSyncer_OnChange_ReportsEachFileAndBoundsStats(t *testing.T) {
	store := mem.New()
	var seen []syncer.Change
	s, err := syncer.Open(t.Context(), syncer.Config{Backend: store, Dir: t.TempDir(), MaxChanges: 2,
		OnChange: func(c syncer.Change) { seen = append(seen, c) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(s.Root(), p), []byte(p+p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Push(t.Context(), syncer.PushOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range seen {
		if c.Action != syncer.ActionUpload || c.Bytes != 2 {
			t.Errorf("change %+v, want an upload of 2 bytes", c)
		}
		paths = append(paths, c.Path)
	}
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"a", "b", "c"}) {
		t.Errorf("OnChange saw %v, want a, b, c", paths)
	}
	if len(st.Changes) != 2 || st.ChangesOmitted != 1 {
		t.Errorf("Stats.Changes %d listed, %d omitted; want 2 and 1", len(st.Changes), st.ChangesOmitted)
	}
}
