package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// Preview counts what a push would send, from local state alone.
type Preview struct {
	New     int `json:"new"`
	Changed int `json:"changed"`
	Deleted int `json:"deleted"`
	Total   int `json:"total"`
}

// PreviewPush counts new, changed and deleted files in the dirty set
// without a request and without uploading anything.
func (s *Syncer) PreviewPush(ctx context.Context) (Preview, error) {
	release, err := s.enter(ctx, lockScope{mode: lockRead})
	if err != nil {
		return Preview{}, err
	}
	defer release()
	o := s.begin(ctx, "preview")
	o.held = scopeAll() // it only reads, so any mark is in its scope
	lp, err := s.planLocal(ctx, o, PushOptions{})
	if err != nil {
		return Preview{}, err
	}
	return lp.preview(), nil
}

func (lp localPlan) preview() Preview {
	var p Preview
	for _, u := range lp.uploads {
		if u.hasRec {
			p.Changed++
		} else {
			p.New++
		}
	}
	p.Deleted = len(lp.removes)
	p.Total = p.New + p.Changed + p.Deleted
	return p
}

// Status is what `silt status` shows. It holds no push plan: PreviewPush
// computes one (it walks and hashes), Status only reads local state.
type Status struct {
	Dirty       []string `json:"dirty"`        // marked paths
	Overflow    bool     `json:"overflow"`     // the mark set overflowed
	Bulk        bool     `json:"bulk"`         // MarkAllDirty is pending
	SeenSeq     uint64   `json:"seen_seq"`     // last manifest seq this cache read or wrote
	RemoteSeq   uint64   `json:"remote_seq"`   // current remote seq (when asked)
	RemoteMoved bool     `json:"remote_moved"` // RemoteSeq != SeenSeq
	// PullIncomplete is set while the last pull that failed (a full
	// disk, a network gone, Ctrl-C) has not been followed by a whole pull
	// that succeeded: what it installed stays, but the seq alone does not
	// say the cache holds the snapshot.
	PullIncomplete bool `json:"pull_incomplete,omitempty"`
	// Conflicts are the ones operations reported and nothing settled
	// since (see Syncer.Resolve).
	Conflicts []ConflictRecord `json:"conflicts"`
	// Lazy counts files recorded without their bytes (MetadataOnly).
	Lazy int `json:"lazy"`
	// Excluded and Skipped are what the last push (or dry run) that
	// walked the whole cache left out: paths exclude rules kept out (an
	// excluded directory once), and entries that are not regular files,
	// the first MaxSkipped listed in SkippedList.
	Excluded    int    `json:"excluded"`
	Skipped     int    `json:"skipped"`
	SkippedList []Skip `json:"skipped_list,omitempty"`
	// Backups are local copies silt replaced and kept (see Restore).
	Backups []Backup `json:"backups"`
}

// Status reports the pending marks without touching a file and, with
// remote, whether the remote index moved since this cache last read it
// (one conditional request).
func (s *Syncer) Status(ctx context.Context, remote bool) (Status, error) {
	release, err := s.enter(ctx, lockScope{mode: lockRead})
	if err != nil {
		return Status{}, err
	}
	defer release()
	st := Status{Dirty: []string{}}
	_ = s.st.view(func(t stx) error {
		d := t.dirty()
		st.Overflow, st.Bulk = d.overflow, d.bulk
		for p := range d.paths {
			st.Dirty = append(st.Dirty, p)
		}
		st.SeenSeq = t.metaUint(metaSeenSeq)
		st.PullIncomplete = t.metaUint(metaPullFailed) != 0
		w := t.lastWalk()
		st.Excluded, st.Skipped, st.SkippedList = w.Excluded, w.Skipped, w.List
		return t.filesIn(index.All, func(_ string, rec fileRecord) error {
			if !rec.Hydrated {
				st.Lazy++
			}
			return nil
		})
	})
	slices.Sort(st.Dirty)
	if st.Conflicts, err = s.conflicts(); err != nil {
		return st, err
	}
	if st.Backups, err = s.backups(); err != nil {
		return st, err
	}
	if remote {
		snap, err := s.readManifest(ctx, s.begin(ctx, "status").backend())
		if err != nil {
			return st, err
		}
		st.RemoteSeq = snap.Manifest.Seq
		st.RemoteMoved = st.RemoteSeq != st.SeenSeq
	}
	return st, nil
}

// ReadHead reads the bucket's head through b, which must be this cache's
// namespace root or a layer over it (a request counter, say): conditional
// on the copy the cache holds, so an unchanged head costs one request at
// any size, and a cold cache reads it whole.
func (s *Syncer) ReadHead(ctx context.Context, b backend.Backend) (index.Head, error) {
	return s.readManifest(ctx, b)
}

// SeenSeq returns the highest manifest seq this cache has read or
// written: Status's SeenSeq without Status's scan of every file record,
// which costs about a second and 400 MB of allocations at a million
// files.
func (s *Syncer) SeenSeq() uint64 {
	var seq uint64
	_ = s.st.view(func(t stx) error { seq = t.metaUint(metaSeenSeq); return nil })
	return seq
}

// HydrateFile downloads one file that a MetadataOnly pull left behind (or
// any committed file), atomically. It returns false when the path has no
// committed entry. A file already present locally is left as it is and
// costs no request.
func (s *Syncer) HydrateFile(ctx context.Context, path string) (bool, Stats, error) {
	p, err := normalizePath(path)
	if err == nil && p == "" {
		err = &index.PathError{Path: path, Reason: "names the whole cache, not a file"}
	}
	if err != nil {
		return false, Stats{Op: "hydrate"}, err
	}
	release, err := s.enter(ctx, scopePaths(p))
	if err != nil {
		return false, Stats{Op: "hydrate"}, err
	}
	defer release()
	o := s.begin(ctx, "hydrate")
	ok, err := s.hydrate(ctx, o, p)
	return ok, o.fail(err), err
}

func (s *Syncer) hydrate(ctx context.Context, o *op, p string) (bool, error) {
	var rec fileRecord
	var hasRec bool
	_ = s.st.view(func(t stx) error { rec, hasRec = t.file(p); return nil })
	lf, err := s.local.stat(p)
	if err != nil {
		return false, err
	}
	if lf.exists {
		return true, nil // present: hydrating never overwrites a local copy
	}
	// A lazy record's entry first: one request when its bytes are there. A
	// hydrated record of a file deleted locally since is history, not the
	// index: the committed entry may have moved on, so ask the index.
	entry, known := index.Entry{Size: rec.Size, SHA256: rec.SHA256, Pack: rec.Pack, Off: rec.Off, Exec: rec.Exec, Z: rec.Z, ZN: rec.ZN, In: rec.In}, hasRec && !rec.Hydrated
	for attempt := 0; attempt < 2; attempt++ {
		if !known {
			var err error
			if entry, known, err = s.lookup(ctx, o, p); err != nil || !known {
				if err == nil && hasRec {
					err = s.st.update(func(t stx) error { return t.deleteFile(p) })
				}
				return false, err
			}
		}
		in, err := s.download(ctx, o.backend(), p, entry, want{})
		if errors.Is(err, index.ErrMissingObject) && attempt == 0 && hasRec {
			known = false // the record may be older than the index: ask it
			continue
		}
		var le *LocalEditError
		if errors.As(err, &le) {
			return true, nil // created locally meanwhile: never overwritten
		}
		if err != nil {
			return false, err
		}
		got := in.lf
		o.add(func(st *Stats) { st.Files.Downloaded++; st.Bytes.Down += got.size })
		o.change(Change{Path: p, Action: ActionDownload, Bytes: got.size})
		return true, s.st.update(func(t stx) error {
			return t.putFile(p, fileRecord{Size: got.size, SHA256: entry.SHA256, MtimeNs: got.mtimeNs, Hydrated: true, VerifiedNs: now(), Exec: entry.Exec})
		})
	}
	return false, fmt.Errorf("hydrate %s: %w", p, index.ErrMissingObject)
}

// lookup returns the committed entry of p: the manifest and one shard.
func (s *Syncer) lookup(ctx context.Context, o *op, p string) (index.Entry, bool, error) {
	head, err := s.readManifest(ctx, o.backend())
	if err != nil || len(head.Manifest.Shards) == 0 {
		return index.Entry{}, false, err
	}
	sh := s.newShards(o.backend())
	entries, err := sh.get(ctx, head.Manifest, head.Manifest.ShardFor(p))
	if err != nil {
		return index.Entry{}, false, err
	}
	e, ok := entries[p]
	_ = s.st.update(sh.save)
	return e, ok, nil
}

// PushManifest is a prepared push: data uploaded, index change decided,
// nothing committed. It marshals to JSON, so a host may prepare outside its
// global lock and commit under it, even from another process on the same
// cache. Hosts treat it as opaque.
type PushManifest struct {
	pm *prepared
}

// pushManifestFormat is the version of PushManifest's JSON: 2 since
// entries name content-addressed objects.
const pushManifestFormat = 2

type pushManifestJSON struct {
	Format   int                    `json:"format"`
	Upserts  map[string]index.Entry `json:"upserts"`
	Bases    map[string]string      `json:"bases"`
	Removals map[string]string      `json:"removals"`
	Records  map[string]fileRecord  `json:"records"`
	Keep     map[string]bool        `json:"keep,omitempty"`
	Forget   []string               `json:"forget,omitempty"`
	Touch    map[string]fileRecord  `json:"touch,omitempty"`
	Marks    map[string]uint64      `json:"marks"`
	Overflow bool                   `json:"overflow,omitempty"`
	Bulk     bool                   `json:"bulk,omitempty"`
	UpTo     uint64                 `json:"up_to"`
	Proofs   map[string]string      `json:"proofs,omitempty"`
}

// lock is the scope lock committing pm takes: every path whose record or
// mark the commit may change.
func (pm *prepared) lock() lockScope {
	if pm.d.overflow || pm.d.bulk {
		return scopeAll()
	}
	var ps []string
	ps = slices.AppendSeq(ps, maps.Keys(pm.keep))
	ps = slices.AppendSeq(ps, maps.Keys(pm.upserts))
	ps = slices.AppendSeq(ps, maps.Keys(pm.removals))
	ps = slices.AppendSeq(ps, maps.Keys(pm.d.paths))
	ps = append(ps, pm.forget...)
	for _, t := range pm.touch {
		ps = append(ps, t.path)
	}
	return scopePaths(ps...)
}

// Files counts the files the manifest would commit (written plus removed).
func (m *PushManifest) Files() int { return len(m.pm.upserts) + len(m.pm.removals) }

// MarshalJSON encodes the manifest.
func (m *PushManifest) MarshalJSON() ([]byte, error) {
	pm := m.pm
	j := pushManifestJSON{Format: pushManifestFormat, Upserts: pm.upserts, Bases: pm.bases, Removals: pm.removals, Records: pm.records,
		Keep: pm.keep, Forget: pm.forget, Touch: map[string]fileRecord{}, Marks: pm.d.paths, Overflow: pm.d.overflow, Bulk: pm.d.bulk, UpTo: pm.d.upTo, Proofs: pm.proofs}
	for _, t := range pm.touch {
		j.Touch[t.path] = *t.record
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a manifest written by MarshalJSON.
func (m *PushManifest) UnmarshalJSON(data []byte) error {
	var j pushManifestJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("push manifest: %w", err)
	}
	if j.Format != pushManifestFormat {
		return fmt.Errorf("push manifest: unknown format %d", j.Format)
	}
	for p := range j.Upserts {
		if err := index.ValidPath(p); err != nil {
			return fmt.Errorf("push manifest: %w", err)
		}
		if e := j.Upserts[p]; !index.ValidSHA256(e.SHA256) || e.Size < 0 || (e.Pack != "" && (!index.ValidSHA256(e.Pack) || e.Off < 0)) || e.Z < 0 || e.Z > 0 && e.Pack == "" || e.In < 0 || e.ZN < 0 || (e.In > 0 || e.ZN > 0) && e.Z == 0 {
			return fmt.Errorf("push manifest: %q: bad size or sha256", p)
		}
	}
	for p := range j.Removals {
		if err := index.ValidPath(p); err != nil {
			return fmt.Errorf("push manifest: %w", err)
		}
	}
	pm := &prepared{upserts: j.Upserts, bases: j.Bases, removals: j.Removals, records: j.Records, keep: j.Keep, forget: j.Forget, proofs: j.Proofs,
		d: dirtySet{paths: j.Marks, overflow: j.Overflow, bulk: j.Bulk, upTo: j.UpTo}}
	for p, r := range j.Touch {
		pm.touch = append(pm.touch, pullDone{p, &r})
	}
	m.pm = pm.normalize()
	return nil
}

// PreparePush uploads what changed and returns the manifest to commit. It
// writes no index object and clears no dirty mark.
func (s *Syncer) PreparePush(ctx context.Context, opts PushOptions) (*PushManifest, Stats, error) {
	opts.DryRun = false
	o, pm, release, err := s.preparePushed(ctx, "prepare", opts)
	if release == nil {
		return nil, Stats{Op: "prepare"}, err
	}
	defer release()
	// A conflict found here is remembered as a plain push's is (end).
	if err != nil {
		st, err := o.end(err)
		return nil, st, err
	}
	st, err := o.end(nil)
	if err != nil {
		return nil, st, err
	}
	return &PushManifest{pm: pm}, st, nil
}

// CommitPush merges a prepared push onto the current index by
// compare-and-swap and settles the dirty marks it covered. Committing the
// same manifest again changes nothing. A manifest that cannot be merged
// any more reports each path that moved as a conflict, remembered as a
// plain push's is: Status lists it, the path stays dirty, and Resolve
// settles it.
func (s *Syncer) CommitPush(ctx context.Context, m *PushManifest, fence *Fence) (Stats, error) {
	if m == nil || m.pm == nil {
		return Stats{Op: "commit"}, errors.New("syncer: CommitPush of an empty manifest")
	}
	release, err := s.enter(ctx, m.pm.lock())
	if err != nil {
		return Stats{Op: "commit"}, err
	}
	defer release()
	o := s.begin(ctx, "commit")
	pm := *m.pm
	pm.sh = s.newShards(o.backend())
	pm.head = nil // the index has moved on since prepare: read it fresh
	err = s.commitPrepared(ctx, o, &pm, fence)
	return o.end(err)
}
