package syncer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/index"
)

// Bounds of how a pull reads packs.
const (
	// runGap is the largest hole between two wanted ranges of one pack that
	// a single ranged read still spans: reading it costs less than a
	// request.
	runGap = 64 << 10
	// sharedBufferMax bounds the bytes buffered to install one packed
	// content at several paths from one read; larger ones are read again.
	sharedBufferMax = 16 << 20
	// runMax bounds the span of one ranged read, so a cold pull of a few
	// large packs still installs with several workers (each install
	// fsyncs) at a few requests per pack.
	runMax = 4 << 20
)

// packSpot is one location in a pack and the downloads that want it: one
// content at several paths, or, at a frame, every file in it that is
// wanted; size is what it takes of the pack (the frame's length).
type packSpot struct {
	off, size int64
	acts      []pullAction
}

// packRun is one ranged read of a pack: the spots it serves, ascending.
type packRun struct {
	pack  string
	spots []packSpot
}

func (r packRun) rng() backend.Range {
	last := r.spots[len(r.spots)-1]
	return backend.Range{Offset: r.spots[0].off, Length: last.off + last.size - r.spots[0].off}
}

// packRuns groups packed downloads by pack and coalesces each pack's wanted
// ranges into runs: ranges closer than runGap share one read, and when the
// wanted bytes are at least half of the span from the first to the last,
// the whole span is read, holes included. No run spans more than runMax
// bytes (unless one range alone does).
func packRuns(acts []pullAction) []packRun {
	byPack := map[string]map[int64]*packSpot{}
	for _, a := range acts {
		spots := byPack[a.entry.Pack]
		if spots == nil {
			spots = map[int64]*packSpot{}
			byPack[a.entry.Pack] = spots
		}
		sp := spots[a.entry.Off]
		if sp == nil {
			sp = &packSpot{off: a.entry.Off, size: a.entry.Stored()}
			spots[a.entry.Off] = sp
		}
		if first := sp.acts; a.entry.Stored() != sp.size || len(first) > 0 && (first[0].entry.Framed() != a.entry.Framed() || !a.entry.Framed() && first[0].entry.Size != a.entry.Size) {
			// Two entries claim different lengths at one offset: no shared
			// read can serve both, so this one is read on its own.
			byPack[a.entry.Pack+"\x00"+a.path] = map[int64]*packSpot{a.entry.Off: {off: a.entry.Off, size: a.entry.Stored(), acts: []pullAction{a}}}
			continue
		}
		sp.acts = append(sp.acts, a)
	}
	var runs []packRun
	for _, key := range slices.Sorted(maps.Keys(byPack)) {
		var spots []packSpot
		var wanted int64
		for _, sp := range byPack[key] {
			spots = append(spots, *sp)
			wanted += sp.size
		}
		slices.SortFunc(spots, func(a, b packSpot) int { return cmpInt64(a.off, b.off) })
		pack := spots[0].acts[0].entry.Pack
		first, last := spots[0], spots[len(spots)-1]
		whole := 2*wanted >= last.off+last.size-first.off && !overlaps(spots)
		cur := packRun{pack: pack}
		end := int64(0)
		for _, sp := range spots {
			far := !whole && sp.off-end > runGap
			if len(cur.spots) > 0 && (sp.off < end || far || sp.off+sp.size-cur.spots[0].off > runMax) {
				runs = append(runs, cur)
				cur = packRun{pack: pack}
			}
			cur.spots = append(cur.spots, sp)
			end = sp.off + sp.size
		}
		runs = append(runs, cur)
	}
	return runs
}

// overlaps reports whether sorted spots overlap (only a corrupt index has
// such entries; a run never reads backwards).
func overlaps(spots []packSpot) bool {
	for i := 1; i < len(spots); i++ {
		if spots[i].off < spots[i-1].off+spots[i-1].size {
			return true
		}
	}
	return false
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// downloadRun reads one run with a single ranged read and installs each
// spot's bytes at its paths, each through the verifying, atomic install:
// bytes that do not hash to their entry are reported for that path and
// never installed, and the run goes on. settle records each outcome. The
// installs are part of batch bt.
func (s *Syncer) downloadRun(ctx context.Context, b backend.Backend, bt *installBatch, run packRun, settle func(pullAction, installed, error) error) error {
	r := run.rng()
	head := run.spots[0].acts[0]
	rc, err := index.OpenPackRange(ctx, b, head.path, head.entry.SHA256, run.pack, r)
	var oe *index.ObjectError
	if errors.As(err, &oe) {
		for _, sp := range run.spots {
			for _, a := range sp.acts {
				e := *oe
				e.Path, e.SHA256 = a.path, a.entry.SHA256
				if err := settle(a, installed{}, &e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err != nil {
		return settle(head, installed{}, err)
	}
	defer rc.Close()
	pos := r.Offset
	for _, sp := range run.spots {
		if _, err := io.CopyN(io.Discard, rc, sp.off-pos); err != nil {
			return settle(sp.acts[0], installed{}, err)
		}
		pos = sp.off + sp.size
		part := io.LimitReader(rc, sp.size)
		if e := sp.acts[0].entry; e.Framed() {
			// A frame is decoded once, then each wanted file in it is
			// installed from its place.
			data, err := index.ReadFrame(part, sp.acts[0].path, e)
			if _, derr := io.Copy(io.Discard, part); derr != nil && err == nil {
				err = derr
			}
			for _, a := range sp.acts {
				var in installed
				ierr := err
				if oe := (*index.ObjectError)(nil); errors.As(err, &oe) {
					e := *oe
					e.Path, e.SHA256 = a.path, a.entry.SHA256
					ierr = &e
				}
				var member []byte
				if ierr == nil {
					member, ierr = index.Member(data, a.path, a.entry)
				}
				if ierr == nil {
					in, ierr = s.local.installIn(bt, a.path, bytes.NewReader(member), a.entry, a.want())
				}
				if err := settle(a, in, ierr); err != nil {
					return err
				}
			}
			continue
		}
		if len(sp.acts) > 1 && sp.size <= sharedBufferMax {
			data, err := io.ReadAll(part)
			if err != nil {
				return settle(sp.acts[0], installed{}, err)
			}
			for _, a := range sp.acts {
				in, err := s.local.installIn(bt, a.path, bytes.NewReader(data), a.entry, a.want())
				if err := settle(a, in, err); err != nil {
					return err
				}
			}
			continue
		}
		in, err := s.local.installIn(bt, sp.acts[0].path, part, sp.acts[0].entry, sp.acts[0].want())
		if _, derr := io.Copy(io.Discard, part); derr != nil && err == nil {
			err = derr
		}
		if err := settle(sp.acts[0], in, err); err != nil {
			return err
		}
		for _, a := range sp.acts[1:] {
			in, err := s.downloadIn(ctx, b, bt, a.path, a.entry, a.want())
			if err := settle(a, in, err); err != nil {
				return err
			}
		}
	}
	return nil
}
