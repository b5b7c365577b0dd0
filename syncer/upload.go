package syncer

// The upload phase of a push: each new content once, small ones packed
// (pack.go), every byte checked against the hash the plan took.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// reasonChangedWhileRead is why a file is left dirty when its bytes moved
// between planning and upload.
const reasonChangedWhileRead = "changed while it was being pushed; it stays dirty for the next push"

// uploadAll stores each distinct content once, create-if-absent under its
// hash: an object already there holds the same bytes (deduplication). No
// upload is ever conditional on a version, and nothing a committed snapshot
// references is ever overwritten. The modes (an executable bit flipped on
// bytes the index already names) need no upload: they are counted here, as
// deduplicated.
func (s *Syncer) uploadAll(ctx context.Context, o *op, pm *prepared, sends, modes []upload) error {
	for _, u := range modes {
		pm.counted[u.path] = ActionDedup
		o.add(func(st *Stats) { st.Files.Deduplicated++ })
		o.change(Change{Path: u.path, Action: ActionDedup, Reason: modeReason(u.exec())})
	}
	b := o.backend()
	bySHA := map[string][]upload{}
	var order []string
	for _, u := range sends {
		if _, ok := bySHA[u.sha]; !ok {
			order = append(order, u.sha)
		}
		bySHA[u.sha] = append(bySHA[u.sha], u)
	}
	var bytes int64
	for _, sha := range order {
		bytes += bySHA[sha][0].local.size
	}
	o.planned(bytes)
	packs, alone := s.planPacks(order, bySHA)
	var mu sync.Mutex
	moved := 0
	// settle records the outcome of one content: its uploads are committed
	// at loc (uploader's bytes were sent or found), or stay dirty.
	settle := func(us []upload, loc index.Entry, stored bool, uploader, proof string, changed []upload) {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range us {
			if !stored || slices.ContainsFunc(changed, func(v upload) bool { return v.path == u.path }) {
				pm.keep[u.path] = true
				o.conflict(u.path, reasonChangedWhileRead)
				continue
			}
			if u.path != uploader {
				pm.counted[u.path] = ActionDedup
				o.add(func(st *Stats) { st.Files.Deduplicated++ })
				o.change(Change{Path: u.path, Action: ActionDedup, Bytes: u.local.size})
			}
			x := u.exec()
			pm.upserts[u.path] = index.Entry{Size: u.local.size, SHA256: u.sha, Pack: loc.Pack, Off: loc.Off, Exec: x, Z: loc.Z, ZN: loc.ZN, In: loc.In}
			pm.bases[u.path] = u.base()
			if proof != "" {
				pm.proofs[u.path] = proof
			}
			pm.records[u.path] = u.record(x)
		}
		o.progress(us[0].path, us[0].local.size, &moved, len(order))
	}
	sent := func(u upload, sent bool) {
		a := ActionDedup
		if sent {
			a = ActionUpload
		}
		mu.Lock()
		pm.counted[u.path] = a
		mu.Unlock()
		if sent {
			o.add(func(st *Stats) { st.Files.Uploaded++; st.Bytes.Up += u.local.size })
			o.change(Change{Path: u.path, Action: ActionUpload, Bytes: u.local.size})
		} else {
			o.add(func(st *Stats) { st.Files.Deduplicated++ })
			o.change(Change{Path: u.path, Action: ActionDedup, Bytes: u.local.size})
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	inFlight := make(chan struct{}, packsInFlight)
	for _, shas := range packs {
		g.Go(func() error {
			select {
			case inFlight <- struct{}{}:
			case <-gctx.Done():
				return gctx.Err()
			}
			defer func() { <-inFlight }()
			pack, placed, dropped, wasSent, err := s.sendPack(gctx, b, shas, bySHA)
			if err != nil {
				return err
			}
			for _, sha := range dropped {
				settle(bySHA[sha], index.Entry{}, false, "", "", nil)
			}
			for _, pmb := range placed {
				sent(pmb.from, wasSent)
				settle(bySHA[pmb.sha], index.Entry{Pack: pack, Off: pmb.at.Off, Z: pmb.at.Z, ZN: pmb.at.ZN, In: pmb.at.In}, true, pmb.from.path, "", pmb.changed)
			}
			return nil
		})
	}
	for _, sha := range alone {
		g.Go(func() error {
			us := bySHA[sha]
			stored, uploader := false, ""
			var changed []upload
			var loc index.Entry
			proof := ""
			for _, u := range us {
				var wasSent bool
				var err error
				loc, wasSent, err = s.send(gctx, b, u, pm.refs[u.sha])
				if errors.Is(err, errChangedWhileRead) {
					changed = append(changed, u)
					continue
				}
				if err != nil {
					return fmt.Errorf("push %s: %w", u.path, err)
				}
				sent(u, wasSent)
				stored = true
				uploader = u.path
				if !wasSent {
					proof = pm.refs[sha]
				}
				break
			}
			settle(us, loc, stored, uploader, proof, changed)
			return nil
		})
	}
	return g.Wait()
}

// send stores u's planned content under its hash and reports where it is
// and whether bytes were sent. An object already there is deduplicated
// against only when proof, a path of the shards read while preparing,
// names it (the commit checks it still does), or when it is empty (GC
// never deletes the empty object). Otherwise it may be garbage a
// concurrent GC has already decided to delete: the bytes go up again,
// as a pack of this one content followed by a random trailer, under a
// name no GC has listed (see FORMAT.md, "Garbage collection"). Bytes that
// no longer hash to the planned sha256 are never handed over in full, so
// the store aborts the write: errChangedWhileRead.
func (s *Syncer) send(ctx context.Context, b backend.Backend, u upload, proof string) (index.Entry, bool, error) {
	key := index.ObjectKey(u.sha)
	caps := b.Capabilities()
	cond := backend.Cond{IfAbsent: true, ContentNamed: true}
	exists := false
	if !caps.ConditionalPut && !caps.AtomicCreate {
		// No atomic create: look first. Same name, same bytes, so a race
		// between two writers of one object is harmless.
		ok, err := backend.Exists(ctx, b, key)
		if err != nil {
			return index.Entry{}, false, err
		}
		exists = ok
		cond = backend.Cond{ContentNamed: true}
	}
	if !exists {
		f, err := s.local.open(u.path)
		if err != nil {
			return index.Entry{}, false, errChangedWhileRead // gone or unreadable since it was hashed
		}
		defer f.Close()
		vr := &verifyingReader{f: f, size: u.local.size, want: u.sha, h: sha256.New()}
		_, err = b.Put(ctx, key, vr, u.local.size, cond)
		switch {
		case vr.failed:
			return index.Entry{}, false, errChangedWhileRead
		case backend.IsPrecondition(err):
			exists = true
		case err != nil:
			return index.Entry{}, false, err
		default:
			return index.Entry{}, true, nil
		}
	}
	if proof != "" || u.local.size == 0 {
		return index.Entry{}, false, nil // the same bytes are already stored
	}
	pack, err := s.sendAlone(ctx, b, u)
	return index.Entry{Pack: pack}, true, err
}

// sendAlone stores u's bytes followed by a random trailer as a pack and
// returns its name: one pass hashes the whole, a second uploads it through
// the verifying reader.
func (s *Syncer) sendAlone(ctx context.Context, b backend.Backend, u upload) (string, error) {
	f, err := s.local.open(u.path)
	if err != nil {
		return "", errChangedWhileRead // gone or unreadable since it was hashed
	}
	defer f.Close()
	st := trailed{f: f, size: u.local.size, trailer: index.Trailer()}
	total := u.local.size + index.PackTrailer
	own, whole := sha256.New(), sha256.New()
	if _, err := io.Copy(io.MultiWriter(own, whole), io.NewSectionReader(f, 0, u.local.size)); err != nil {
		return "", err
	}
	if hex.EncodeToString(own.Sum(nil)) != u.sha {
		return "", errChangedWhileRead
	}
	whole.Write(st.trailer)
	pack := hex.EncodeToString(whole.Sum(nil))
	vr := &verifyingReader{f: st, size: total, want: pack, h: sha256.New()}
	_, err = b.Put(ctx, index.PackKey(pack), vr, total, backend.Cond{IfAbsent: true, ContentNamed: true})
	switch {
	case vr.failed:
		return "", errChangedWhileRead
	case backend.IsPrecondition(err):
		// The name holds a fresh random trailer: a pack already there is
		// this write's own, landed before a lost acknowledgement.
	case err != nil:
		return "", fmt.Errorf("write pack %s: %w", pack, err)
	}
	return pack, nil
}

// trailed reads a file's size bytes and then a trailer.
type trailed struct {
	f       io.ReaderAt
	size    int64
	trailer []byte
}

func (t trailed) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < t.size {
		k, err := t.f.ReadAt(p[:min(int64(len(p)), t.size-off)], off)
		n += k
		if err != nil && !errors.Is(err, io.EOF) {
			return n, err
		}
		if int64(k) < min(int64(len(p)), t.size-off) {
			return n, io.EOF // the file is shorter than planned
		}
	}
	if n < len(p) {
		at := max(off+int64(n)-t.size, 0)
		if at >= int64(len(t.trailer)) {
			return n, io.EOF
		}
		k := copy(p[n:], t.trailer[at:])
		n += k
		if n < len(p) {
			return n, io.EOF
		}
	}
	return n, nil
}

// errChangedWhileRead is returned when a file's bytes differ from the ones
// hashed while planning.
var errChangedWhileRead = errors.New("file changed while it was being uploaded")

// verifyingReader hands out exactly size bytes of f and checks that they
// hash to want before handing out the last of them: on a mismatch the
// final Read fails, so the store never completes an object whose name is
// not the hash of its bytes. A retrying wrapper (or a multipart upload)
// may seek: a seek to 0 starts a fresh pass; a seek elsewhere re-reads
// without re-hashing, or hashes the skipped bytes first.
type verifyingReader struct {
	f      io.ReaderAt
	size   int64
	want   string
	h      hash.Hash
	pos    int64 // next byte handed out
	hashed int64 // bytes [0, hashed) are in h
	failed bool
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	if r.failed {
		return 0, errChangedWhileRead
	}
	if r.pos >= r.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.size-r.pos)]
	n, err := r.f.ReadAt(p, r.pos)
	if errors.Is(err, io.EOF) {
		if r.pos+int64(n) < r.size {
			r.failed = true // shorter than planned
			return 0, errChangedWhileRead
		}
		err = nil
	}
	if err != nil {
		return 0, err
	}
	end := r.pos + int64(n)
	if end > r.hashed {
		r.h.Write(p[r.hashed-r.pos : n])
		r.hashed = end
		if end == r.size && hex.EncodeToString(r.h.Sum(nil)) != r.want {
			r.failed = true
			return 0, errChangedWhileRead
		}
	}
	r.pos = end
	return n, nil
}

func (r *verifyingReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	}
	if offset < 0 || offset > r.size {
		return r.pos, fmt.Errorf("seek to %d outside [0, %d]", offset, r.size)
	}
	switch {
	case offset == 0:
		r.h.Reset()
		r.hashed = 0
	case offset > r.hashed:
		if _, err := io.Copy(r.h, io.NewSectionReader(r.f, r.hashed, offset-r.hashed)); err != nil {
			return r.pos, err
		}
		r.hashed = offset
	}
	r.pos = offset
	return offset, nil
}
