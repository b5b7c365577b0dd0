package syncer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/siltsync/silt/index"
)

// Reasons of the outcomes that keep or settle a local copy.
const (
	reasonRemoteWins = "deleted locally but changed remotely; the remote copy wins"
	reasonEditKept   = "changed locally while the pull replaced it; the local copy is kept (Conflict.Copy): resolve --keep-local restores it, --take-remote keeps it as a backup"
	// reasonRemovedEditKept: the peer's deletion was applied, the edit
	// that raced it kept.
	reasonRemovedEditKept = "deleted remotely and changed locally while the pull removed it; the local copy is kept (Conflict.Copy): resolve --keep-local restores it"
)

// Backup is a local copy silt replaced and kept under .silt/kept, until
// Restore puts it back or the user deletes the copy.
type Backup struct {
	Path   string    `json:"path"`
	Copy   string    `json:"copy"` // relative to the cache directory
	Reason string    `json:"reason"`
	Op     string    `json:"op"`
	At     time.Time `json:"at"`
}

// ErrNoBackup is returned by Restore for a path with no kept copy.
var ErrNoBackup = errors.New("no kept local copy of this path (silt status lists them)")

// ErrUnpushedEdits is returned by Resolve with TakeRemote for a path that
// has local edits not pushed and no remembered conflict; Force overrides
// it (the local copy is kept as a backup either way).
var ErrUnpushedEdits = errors.New("the local copy has edits that were never pushed and no conflict; resolve --force replaces it (keeping a backup)")

// conflictCopy reports a conflict whose local copy was kept at copy.
func (o *op) conflictCopy(p, reason, copy string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Files.Conflicts++
	o.stats.Conflicts = append(o.stats.Conflicts, Conflict{Path: p, Reason: reason, Copy: copy})
	o.changeLocked(Change{Path: p, Action: ActionConflict, Reason: reason + ": " + copy})
}

// backups returns the kept copies whose file still exists, by path, oldest
// first.
func (s *Syncer) backups() ([]Backup, error) {
	out := []Backup{}
	err := s.st.view(func(t stx) error {
		bs, err := t.backups()
		out = append(out, bs...)
		return err
	})
	out = slices.DeleteFunc(out, func(b Backup) bool {
		_, err := s.local.dir.Lstat(b.Copy)
		return errors.Is(err, fs.ErrNotExist)
	})
	return out, err
}

// Restore puts the newest kept copy of path back in place (a backup, or
// the copy a conflict kept), keeping what it replaces as a backup in turn,
// and marks the path dirty: the next push sends it, with the usual
// conflict check against what this cache last synced.
func (s *Syncer) Restore(ctx context.Context, path string) (Stats, error) {
	p, err := normalizePath(path)
	if err == nil && p == "" {
		err = &index.PathError{Path: path, Reason: "names the whole cache, not a file"}
	}
	if err != nil {
		return Stats{Op: "restore"}, err
	}
	release, err := s.enter(ctx, scopePaths(p))
	if err != nil {
		return Stats{Op: "restore"}, err
	}
	defer release()
	o := s.begin(ctx, "restore")
	err = s.restore(o, p, "restore")
	return o.fail(err), err
}

// restore installs the newest kept copy of p (a conflict's first).
func (s *Syncer) restore(o *op, p, why string) error {
	copy, conflict, err := s.newestCopy(p)
	if err != nil {
		return err
	}
	if copy == "" {
		return fmt.Errorf("restore %s: %w", p, ErrNoBackup)
	}
	if err := s.local.dir.MkdirAll(dirOf(s.local.name(p)), 0o755); err != nil {
		return s.local.explain(p, err)
	}
	kept, _, err := s.local.replace(p, copy, want{backup: true})
	if err != nil {
		return err
	}
	_ = s.local.dir.Remove(copy) // still there when it was linked into place
	o.change(Change{Path: p, Action: ActionResolve, Reason: "restored the kept local copy " + copy})
	return s.st.update(func(t stx) error {
		if err := t.forgetBackup(Backup{Path: p, Copy: copy}); err != nil {
			return err
		}
		if kept != "" {
			if err := t.putBackup(Backup{Path: p, Copy: kept, Reason: "replaced by " + why, Op: why, At: time.Now().UTC()}); err != nil {
				return err
			}
		}
		if conflict {
			if err := t.forgetConflict(p); err != nil {
				return err
			}
		}
		return t.markDirty(p, s.cfg.DirtyCap)
	})
}

// newestCopy returns the kept copy Restore would install: the one of p's
// remembered conflict, else p's newest backup.
func (s *Syncer) newestCopy(p string) (copy string, conflict bool, err error) {
	cs, err := s.conflicts()
	if err != nil {
		return "", false, err
	}
	for _, c := range cs {
		if c.Path == p && c.Copy != "" {
			return c.Copy, true, nil
		}
	}
	bs, err := s.backups()
	for _, b := range bs {
		if b.Path == p && b.Copy > copy {
			copy = b.Copy // names start with their UTC time
		}
	}
	return copy, false, err
}

func dirOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return "."
}
