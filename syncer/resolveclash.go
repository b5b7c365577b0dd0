package syncer

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/siltsync/silt/index"
)

// fileDirClash is a path one side holds as a file and the other as a
// directory (one cache pushed "a", another "a/b"): no install or commit of
// either side can land until a resolve picks one.
type fileDirClash struct {
	path      string                 // where the two kinds meet
	localFile bool                   // the local side is the file, the remote side the directory
	remote    map[string]index.Entry // the remote side: the file's entry, or the directory's entries
}

// The reasons of a file/directory clash name both sides; resolve
// --keep-local or --take-remote of either path settles it.
const (
	reasonLocalDirRemoteFile = "the local directory %q clashes with the remote file %q"
	reasonLocalFileRemoteDir = "the local file %q clashes with the remote directory %q (it holds %q)"
)

// describe names both sides, for a resolve's reason.
func (c *fileDirClash) describe() string {
	if c.localFile {
		return fmt.Sprintf("the local file %q clashes with the remote directory %q (%d files)", c.path, c.path+"/", len(c.remote))
	}
	return fmt.Sprintf(reasonLocalDirRemoteFile, c.path+"/", c.path)
}

// clashReason is the conflict reason of a remote file p a pull cannot
// install because the local side has the other kind there, or "".
func (l *local) clashReason(p string) string {
	_, reason := l.clashAt(p)
	return reason
}

// clashAt is clashReason with the local path in the way: p's directory,
// or the file where p's parent directory should be.
func (l *local) clashAt(p string) (root, reason string) {
	if fi, err := l.dir.Lstat(l.name(p)); err == nil {
		if fi.IsDir() {
			return p, fmt.Sprintf(reasonLocalDirRemoteFile, p+"/", p)
		}
		return "", ""
	}
	for d := path.Dir(p); d != "." && d != ""; d = path.Dir(d) {
		if fi, err := l.dir.Lstat(l.name(d)); err == nil {
			if fi.Mode().IsRegular() {
				return d, fmt.Sprintf(reasonLocalFileRemoteDir, d, d+"/", p)
			}
			return "", ""
		}
	}
	return "", ""
}

// findClash reports the file/directory clash p lies in: at p, or at the
// nearest ancestor of p where the local and the committed kinds differ.
// Nil when there is none.
func (s *Syncer) findClash(ctx context.Context, o *op, p string) (*fileDirClash, error) {
	head, err := s.readManifest(ctx, o.backend())
	if err != nil || len(head.Manifest.Shards) == 0 {
		return nil, err
	}
	m := head.Manifest
	sh := s.newShards(o.backend())
	defer func() { _ = s.st.update(sh.save) }()
	for c := p; c != "" && c != "."; c = path.Dir(c) {
		fi, err := s.local.dir.Lstat(s.local.name(c))
		if err != nil {
			continue // absent, or under a file: an ancestor may be the clash
		}
		switch {
		case fi.Mode().IsRegular():
			below := map[string]index.Entry{}
			for _, i := range m.Cover(c) {
				entries, err := sh.get(ctx, m, i)
				if err != nil {
					return nil, err
				}
				for q, e := range entries {
					if q != c && under(q, c) {
						below[q] = e
					}
				}
			}
			if len(below) > 0 {
				return &fileDirClash{path: c, localFile: true, remote: below}, nil
			}
		case fi.IsDir():
			entries, err := sh.get(ctx, m, m.ShardFor(c))
			if err != nil {
				return nil, err
			}
			if e, ok := entries[c]; ok {
				return &fileDirClash{path: c, remote: map[string]index.Entry{c: e}}, nil
			}
		}
	}
	return nil, nil
}

// resolveClash settles c. TakeRemote puts the remote side in place of the
// local one, keeping each local file it displaces as a backup (listed,
// restorable with Restore). KeepLocal records the remote side as this
// cache's base and marks both sides dirty, so the next push of c.path
// sends the local side and deletes the remote side it replaces in one
// commit. Every remembered conflict at or under c.path is settled.
func (s *Syncer) resolveClash(ctx context.Context, o *op, c *fileDirClash, keep Resolution) error {
	var (
		puts    = map[string]fileRecord{}
		backups []Backup
		marks   []string
	)
	at := time.Now().UTC()
	reason := c.describe()
	switch {
	case keep == KeepLocal:
		// The remote side becomes what this cache synced, so the push
		// that finds it absent (a directory or a file in its place)
		// deletes it. MtimeNs 0: no stat can vouch for these records.
		for q, e := range c.remote {
			puts[q] = fileRecord{Size: e.Size, SHA256: e.SHA256, Hydrated: true, Exec: e.Exec}
			marks = append(marks, q)
		}
		marks = append(marks, c.path)
		reason += ": kept the local side; push it to replace the remote side"
	default:
		displaced, err := s.displaceLocal(c)
		if err != nil {
			return err
		}
		for _, d := range displaced {
			d.Reason, d.Op, d.At = "replaced by resolve --take-remote ("+c.describe()+")", "resolve", at
			backups = append(backups, d)
		}
		for _, q := range slices.Sorted(maps.Keys(c.remote)) {
			e := c.remote[q]
			got, err := s.download(ctx, o.backend(), q, e, want{backup: true})
			if err != nil {
				return err
			}
			puts[q] = fileRecord{Size: got.lf.size, SHA256: e.SHA256, MtimeNs: got.lf.mtimeNs, Hydrated: true, VerifiedNs: now(), Exec: e.Exec}
			o.add(func(st *Stats) { st.Files.Downloaded++; st.Bytes.Down += got.lf.size })
		}
		reason += ": took the remote side"
		if len(backups) > 0 {
			reason += fmt.Sprintf("; the local side is kept as a backup (%d files, under %s)", len(backups), keptDir)
		}
	}
	o.change(Change{Path: c.path, Action: ActionResolve, Reason: reason})
	return s.st.update(func(t stx) error {
		switch {
		case keep == TakeRemote:
			// The local side is gone: none of its records stands.
			if err := t.deleteFilesUnder(c.path); err != nil {
				return err
			}
		case c.localFile:
			// Nothing is committed at the file's path: it is new there.
			if err := t.deleteFile(c.path); err != nil {
				return err
			}
		}
		for _, q := range slices.Sorted(maps.Keys(puts)) {
			if err := t.putFile(q, puts[q]); err != nil {
				return err
			}
		}
		for _, b := range backups {
			if err := t.putBackup(b); err != nil {
				return err
			}
		}
		if keep == TakeRemote {
			if err := t.unmarkDirtyUnder(c.path); err != nil {
				return err
			}
		}
		for _, q := range marks {
			if err := t.markDirty(q, s.cfg.DirtyCap); err != nil {
				return err
			}
		}
		return t.forgetConflictsUnder(c.path)
	})
}

// displaceLocal moves the local side of c out of the way: the file at
// c.path, or every file of the directory there (then the emptied
// directories), each into keptDir. It returns their backups. Anything in
// the directory silt does not sync (a symlink, a socket) is refused
// before anything moves.
func (s *Syncer) displaceLocal(c *fileDirClash) ([]Backup, error) {
	var files, dirs []string
	if c.localFile {
		files = []string{c.path}
	} else {
		err := fs.WalkDir(s.local.dir.FS(), s.local.name(c.path), func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			p := strings.TrimPrefix(name, s.local.ns)
			switch {
			case d.IsDir():
				dirs = append(dirs, name)
			case d.Type().IsRegular():
				files = append(files, p)
			default:
				return &index.PathError{Path: p, Reason: "not a regular file (" + d.Type().String() + "); move it out of " + c.path + "/ first"}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []Backup
	for _, p := range files {
		copy, err := s.local.removeAs(p, want{backup: true})
		if err != nil {
			return out, err
		}
		if copy != "" {
			out = append(out, Backup{Path: p, Copy: copy})
		}
	}
	for _, d := range slices.Backward(dirs) {
		if err := s.local.dir.Remove(d); err != nil {
			return out, s.local.explain(strings.TrimPrefix(d, s.local.ns), err)
		}
	}
	return out, nil
}

// displaced reports whether the place of the file p is taken by the other
// kind: a directory at p, or a regular file at one of its parents.
func (l *local) displaced(p string) bool { return l.clashReason(p) != "" }
