package syncer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
)

// prepared is a push whose data is uploaded and whose index change is
// decided but not committed.
type prepared struct {
	d        dirtySet
	upserts  map[string]Entry           // committed as they are
	bases    map[string]backend.Version // entry version each upsert replaced ("" = none)
	records  map[string]fileRecord      // records of upserts, stored once committed
	removals map[string]backend.Version // entry versions to remove
	keep     map[string]bool            // marks that must survive this push
	forget   []string                   // records to drop whatever happens
	touch    []pullDone                 // records refreshed whatever happens
	snap     *snapshot                  // the manifest read while preparing
	sh       *shards
}

func (pm *prepared) empty() bool { return len(pm.upserts) == 0 && len(pm.removals) == 0 }

// normalize gives every map a value, so a decoded manifest is usable.
func (pm *prepared) normalize() *prepared {
	if pm.upserts == nil {
		pm.upserts = map[string]Entry{}
	}
	if pm.bases == nil {
		pm.bases = map[string]backend.Version{}
	}
	if pm.records == nil {
		pm.records = map[string]fileRecord{}
	}
	if pm.removals == nil {
		pm.removals = map[string]backend.Version{}
	}
	if pm.keep == nil {
		pm.keep = map[string]bool{}
	}
	if pm.d.paths == nil {
		pm.d.paths = map[string]uint64{}
	}
	return pm
}

// prepare plans the push, checks it against the committed index and
// uploads the data. It commits nothing.
func (s *Syncer) prepare(ctx context.Context, o *op, opts PushOptions) (*prepared, error) {
	lp, err := s.planLocal(ctx, o, opts.All)
	if err != nil {
		return nil, err
	}
	o.mark("walk")
	pm := (&prepared{d: lp.d, touch: lp.touch, sh: s.newShards(o.backend())}).normalize()
	if len(lp.uploads) == 0 && len(lp.removes) == 0 {
		return pm, nil // nothing to send: no request at all
	}
	remote, err := s.remoteEntries(ctx, o, pm, lp)
	if err != nil {
		return nil, err
	}
	o.mark("index")

	var sends []upload
	for _, u := range lp.uploads {
		e, inRemote := remote[u.path]
		switch {
		case inRemote && e.SHA256 == u.sha:
			pm.touch = append(pm.touch, pullDone{u.path, &fileRecord{Size: u.local.size, SHA256: u.sha, MtimeNs: u.local.mtimeNs, Version: e.Version, Hydrated: true, VerifiedNs: now()}})
			o.add(func(st *Stats) { st.Files.Unchanged++ })
		case inRemote && (!u.hasRec || e.Version != u.rec.Version):
			pm.keep[u.path] = true
			o.conflict(u.path, "changed remotely since this cache synced it; pull first")
		default:
			sends = append(sends, u)
		}
	}
	for _, r := range lp.removes {
		e, inRemote := remote[r.path]
		switch {
		case !inRemote:
			pm.forget = append(pm.forget, r.path) // already gone
		case e.Version != r.rec.Version:
			pm.forget = append(pm.forget, r.path)
			o.conflict(r.path, "deleted locally but changed remotely; the remote copy wins")
		default:
			pm.removals[r.path] = e.Version
		}
	}
	if opts.MaxDelete > 0 && len(pm.removals) > opts.MaxDelete {
		return nil, fmt.Errorf("%w: %d planned, limit %d", ErrTooManyDeletes, len(pm.removals), opts.MaxDelete)
	}
	if opts.DryRun {
		o.add(func(st *Stats) { st.Files.Uploaded = len(sends); st.Files.Deleted = len(pm.removals) })
		return pm, nil
	}
	// Note which paths this cache is about to write, so that after a crash
	// its own half-finished uploads are recognised and replaced.
	err = s.st.update(func(t stx) error {
		for _, u := range sends {
			if err := t.setIntent(u.path); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.uploadAll(ctx, o, pm, remote, sends); err != nil {
		return nil, err
	}
	o.mark("upload")
	return pm, nil
}

// remoteEntries reads the manifest and the shards that hold the planned
// paths, and returns the committed entries of those paths.
func (s *Syncer) remoteEntries(ctx context.Context, o *op, pm *prepared, lp localPlan) (map[string]Entry, error) {
	snap, err := s.readManifest(ctx, o.backend())
	if err != nil {
		return nil, err
	}
	pm.snap = &snap
	o.stats.Seq = snap.m.Seq
	var paths []string
	for _, u := range lp.uploads {
		paths = append(paths, u.path)
	}
	for _, r := range lp.removes {
		paths = append(paths, r.path)
	}
	out := map[string]Entry{}
	if len(snap.m.Shards) == 0 {
		return out, nil
	}
	byShard := map[int][]string{}
	for _, p := range paths {
		i := snap.m.shardFor(p)
		byShard[i] = append(byShard[i], p)
	}
	ids := make([]string, 0, len(byShard))
	for i := range byShard {
		ids = append(ids, snap.m.Shards[i].ID)
	}
	if err := pm.sh.prefetch(ctx, ids, s.cfg.Concurrency); err != nil {
		return nil, err
	}
	for i, ps := range byShard {
		entries, err := pm.sh.get(ctx, snap.m.Shards[i].ID)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if e, ok := entries[p]; ok {
				out[p] = e
			}
		}
	}
	return out, nil
}

// uploadAll sends the files in parallel. Each write is conditional on the
// object being where this cache left it (or absent), so a peer's write to
// the same path is never silently overwritten.
func (s *Syncer) uploadAll(ctx context.Context, o *op, pm *prepared, remote map[string]Entry, sends []upload) error {
	b := o.backend()
	conditional := b.Capabilities().ConditionalPut
	var mu sync.Mutex
	moved := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for _, u := range sends {
		g.Go(func() error {
			var cond backend.Cond
			if conditional {
				cond = backend.Cond{IfAbsent: true}
				if e, ok := remote[u.path]; ok {
					cond = backend.Cond{IfMatch: e.Version}
				}
			}
			info, sent, err := s.send(gctx, b, u, cond)
			if backend.IsPrecondition(err) {
				info, sent, err = s.settleUpload(gctx, b, u, remote)
			}
			if backend.IsPrecondition(err) {
				mu.Lock()
				pm.keep[u.path] = true
				mu.Unlock()
				o.conflict(u.path, "written remotely by another writer during this push")
				return nil
			}
			if err != nil {
				return fmt.Errorf("push %s: %w", u.path, err)
			}
			mu.Lock()
			defer mu.Unlock()
			pm.upserts[u.path] = Entry{Size: sent.size, SHA256: sent.sha, Version: info.Version}
			pm.bases[u.path] = remote[u.path].Version
			rec := fileRecord{Size: sent.size, SHA256: sent.sha, MtimeNs: u.local.mtimeNs, Version: info.Version, Hydrated: true, VerifiedNs: now()}
			if sent.sha != u.sha {
				// The file changed while it was read: what was sent is
				// committed, and the path stays dirty for the next push.
				rec.MtimeNs = 0
				pm.keep[u.path] = true
			}
			pm.records[u.path] = rec
			if !sent.adopted {
				o.add(func(st *Stats) { st.Files.Uploaded++; st.Bytes.Up += sent.size })
			}
			o.progress(u.path, sent.size, &moved, len(sends))
			return nil
		})
	}
	return g.Wait()
}

// sentFile is what an upload actually carried.
type sentFile struct {
	sha     string
	size    int64
	adopted bool // already in the store from an interrupted push: nothing sent
}

// send uploads u's file, hashing the bytes as they go out.
func (s *Syncer) send(ctx context.Context, b backend.Backend, u upload, cond backend.Cond) (backend.ObjectInfo, sentFile, error) {
	f, err := s.local.open(u.path)
	if err != nil {
		return backend.ObjectInfo{}, sentFile{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return backend.ObjectInfo{}, sentFile{}, err
	}
	hr := &hashingReader{f: f, h: sha256.New()}
	info, err := b.Put(ctx, u.path, hr, fi.Size(), cond)
	if err != nil {
		return info, sentFile{}, err
	}
	return info, sentFile{sha: hex.EncodeToString(hr.h.Sum(nil)), size: hr.n}, nil
}

// settleUpload handles a failed condition. An object that already holds
// our bytes is adopted. An object at a committed version moved under us: a
// conflict. An uncommitted object is replaced only if this cache left it
// there (an interrupted push); anyone else's is a conflict.
func (s *Syncer) settleUpload(ctx context.Context, b backend.Backend, u upload, remote map[string]Entry) (backend.ObjectInfo, sentFile, error) {
	rc, info, err := b.Get(ctx, u.path, backend.GetOptions{})
	if backend.IsNotExist(err) {
		return s.send(ctx, b, u, backend.Cond{IfAbsent: true})
	}
	if err != nil {
		return info, sentFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil {
		return info, sentFile{}, err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum == u.sha {
		return info, sentFile{sha: sum, size: n, adopted: true}, nil
	}
	if e, ok := remote[u.path]; ok && e.Version == info.Version {
		return info, sentFile{}, backend.ErrPrecondition
	}
	var ours bool
	_ = s.st.view(func(t stx) error { ours = t.hadIntent(u.path); return nil })
	if !ours {
		return info, sentFile{}, backend.ErrPrecondition
	}
	return s.send(ctx, b, u, backend.Cond{IfMatch: info.Version})
}

// hashingReader hashes what is read, restarting when a retrying wrapper
// seeks back to the start.
type hashingReader struct {
	f *os.File
	h hash.Hash
	n int64
}

func (r *hashingReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	return n, err
}

func (r *hashingReader) Seek(offset int64, whence int) (int64, error) {
	pos, err := r.f.Seek(offset, whence)
	if err == nil && pos == 0 {
		r.h.Reset()
		r.n = 0
	}
	return pos, err
}
