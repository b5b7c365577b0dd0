package syncer

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sync"
	"time"
)

// installBatch is one pull's downloads, installed without an fsync each
// and made durable together by one syncCache before the pull records
// them (where batchDurable; elsewhere each install still fsyncs its own
// file). It also remembers the directories the pull made or found, so
// each parent is created once per pull, not once per file.
//
// A crash between a rename and the syncCache can leave a renamed file
// whose bytes never reached the disk. So before the first rename the pull
// writes an intent per download (path -> sha256) in the local state, and
// the transaction that records the files deletes them; an intent left over
// is reconciled at the next Open (reconcileIntents): the file is verified,
// never trusted.
type installBatch struct {
	mu   sync.Mutex
	dirs map[string]bool // directories (cache-relative) known to exist
	fds  dirFDs          // directories held open for new files (Linux)
}

func newInstallBatch() *installBatch { return &installBatch{dirs: map[string]bool{}} }

// mkdirAll creates dir (cache-relative) unless this batch made or saw it.
// A nil batch always asks the filesystem.
func (b *installBatch) mkdirAll(l *local, dir string) error {
	if b != nil {
		b.mu.Lock()
		ok := b.dirs[dir]
		b.mu.Unlock()
		if ok {
			return nil
		}
	}
	if err := l.dir.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if b != nil {
		b.mu.Lock()
		for d := dir; d != "." && d != "" && !b.dirs[d]; d = path.Dir(d) {
			b.dirs[d] = true
		}
		b.mu.Unlock()
	}
	return nil
}

// forget drops dir and what is below it from what b knows exists: it
// vanished (removed by someone else while the pull ran).
func (b *installBatch) forget(dir string) {
	if b == nil {
		return
	}
	b.fds.forget(dir)
	b.mu.Lock()
	defer b.mu.Unlock()
	for d := range b.dirs {
		if under(d, dir) {
			delete(b.dirs, d)
		}
	}
}

// close releases what the batch holds open; its installs are over.
func (b *installBatch) close() { b.fds.close() }

// fsyncEach reports whether an install in b fsyncs its own file.
func (b *installBatch) fsyncEach() bool { return b == nil || !batchDurable }

// reasonTornInstall is the Backup.Reason of a file a crash interrupted the
// install of and whose bytes were not the download's.
const reasonTornInstall = "a crash interrupted the pull installing it and its bytes are not the download's; moved aside, the next pull downloads it afresh"

// reconcileIntents settles the install intents a crashed pull left (see
// installBatch). For each: a file that hashes to the intended bytes is
// recorded as installed, as the pull would have; a file that still holds
// what the state recorded is left as it is; anything else at the path is
// moved to keptDir (a Backup, so nothing a user wrote is lost) and its
// record dropped, so a push never uploads it and the next pull downloads
// the path afresh. It runs at Open, under the state lock, before any
// operation.
func (s *Syncer) reconcileIntents() error {
	var left map[string]intent
	if err := s.st.view(func(t stx) (err error) { left, err = t.intents(); return err }); err != nil {
		return err
	}
	if len(left) == 0 {
		return nil
	}
	type outcome struct {
		rec    *fileRecord // adopt: record it
		backup *Backup     // moved aside: drop the record, remember the copy
	}
	done := map[string]outcome{}
	var recs map[string]fileRecord
	_ = s.st.view(func(t stx) error {
		recs = map[string]fileRecord{}
		for p := range left {
			if r, ok := t.file(p); ok {
				recs[p] = r
			}
		}
		return nil
	})
	for p, it := range left {
		lf, err := s.local.stat(p)
		if err != nil || !lf.exists {
			done[p] = outcome{} // nothing (regular) there: nothing to settle
			continue
		}
		sum, hlf, _, err := s.local.hash(p, clockStamp{})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("verify %s: %w", p, err)
		}
		rec, hasRec := recs[p]
		switch {
		case err != nil:
			done[p] = outcome{}
		case sum == it.SHA256 && hlf.exec == it.Exec:
			done[p] = outcome{rec: &fileRecord{Size: hlf.size, SHA256: sum, MtimeNs: hlf.mtimeNs, Hydrated: true, VerifiedNs: now(), Exec: it.Exec}}
		case hasRec && rec.Hydrated && sum == rec.SHA256:
			done[p] = outcome{} // the install never landed: the synced copy stands
		default:
			copy, err := s.local.moveAside(p)
			if err != nil {
				return fmt.Errorf("move aside %s: %w", p, err)
			}
			done[p] = outcome{backup: &Backup{Path: p, Copy: copy, Reason: reasonTornInstall, Op: "open", At: time.Now().UTC()}}
		}
	}
	// What is recorded or moved aside must be on disk first: after a kill
	// -9 the bytes hashed may still be only in memory.
	if err := syncCache(s.local.dir); err != nil {
		return err
	}
	return s.st.update(func(t stx) error {
		paths := make([]string, 0, len(done))
		for p, o := range done {
			paths = append(paths, p)
			switch {
			case o.rec != nil:
				if err := t.putFile(p, *o.rec); err != nil {
					return err
				}
			case o.backup != nil:
				if err := t.deleteFile(p); err != nil {
					return err
				}
				if err := t.putBackup(*o.backup); err != nil {
					return err
				}
			}
		}
		return t.dropIntents(paths)
	})
}

// moveAside renames the file at p into keptDir and returns the copy's
// name, relative to the cache directory.
func (l *local) moveAside(p string) (string, error) {
	if err := l.dir.MkdirAll(keptDir, 0o755); err != nil {
		return "", err
	}
	name := keptDir + "/" + time.Now().UTC().Format("20060102T150405") + "-" + randID()
	if err := l.dir.Rename(l.name(p), name); err != nil {
		return "", l.explain(p, err)
	}
	return name, nil
}

// beginBatch starts the installBatch of plan's downloads: it writes their
// install intents in one transaction, before any of them can be renamed
// into place, and returns the batch and the paths intended (none: no
// download, and no transaction).
func (s *Syncer) beginBatch(plan pullPlan) (*installBatch, []string, error) {
	in := map[string]intent{}
	for _, list := range [][]pullAction{plan.actions, plan.blocked} {
		for _, a := range list {
			if a.kind == pullDownload || a.kind == pullBlocked {
				in[a.path] = intent{SHA256: a.entry.SHA256, Exec: a.entry.Exec}
			}
		}
	}
	if len(in) == 0 {
		return newInstallBatch(), nil, nil
	}
	if err := s.st.update(func(t stx) error { return t.putIntents(in) }); err != nil {
		return nil, nil, fmt.Errorf("pull: save install intents: %w", err)
	}
	return newInstallBatch(), slices.Sorted(maps.Keys(in)), nil
}

// endBatch makes the batch's installs durable, before the pull records
// them.
func (s *Syncer) endBatch() error { return syncCache(s.local.dir) }
