package index

// Cumulative entries (FORMAT.md, "Cumulative entries"). An entry with a
// base B holds everything touched since the state of B, so it applies to
// any state from B to seq-1: a reader that holds the checkpoint of B (the
// hint, usually) reaches the head N with one listing and the entry N, not
// by reading every entry in between. Del stays the plain delta's, so an
// entry is also the plain delta from seq-1, which is how a reader that
// reads entries one by one (an older silt included) applies it.
//
// The base rolls forward at a checkpoint: the entry of a seq the writer
// checkpoints says so (Checkpoint), and the entries after it take it as
// their base. A writer knows what its head touched since the base from the
// head's carry, kept with the head; a head without one (read from an older
// silt's entry, or a held copy from before) makes a plain delta, and the
// entries after it build on that one's predecessor until the next roll.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
)

const (
	// maxTouched bounds the shards an entry carries since its base: a
	// commit past it writes the plain delta and rolls the base (and
	// checkpoints), so an entry stays a few KB however many commits share
	// a base.
	maxTouched = 64
	// logBlock is how many entries one listing of a key prefix covers:
	// entry keys are zero-padded seqs, so the keys of one block share all
	// digits but the last three.
	logBlock = 1000
)

// carry is what a writer needs of its head to write the next entry
// cumulatively: the base the head's entry builds on, and the keys of the
// shards and fences touched since it, ascending.
type carry struct {
	Base   uint64   `json:"base"`
	Shards []string `json:"shards,omitempty"`
	Fences []string `json:"fences,omitempty"`
}

// rolled is the carry of a head whose seq is a base itself.
func rolled(seq uint64) *carry { return &carry{Base: seq} }

// Carry returns the bytes of what h carries for the next commit's entry
// (nil when it carries nothing), for a cache to keep with its copy of h.
func (h Head) Carry() []byte {
	if h.carry == nil {
		return nil
	}
	data, err := json.Marshal(h.carry)
	if err != nil {
		panic(err) // plain data types only
	}
	return data
}

// WithCarry returns h carrying what data (Carry's bytes) says; bytes that
// do not decode, or a base above h, carry nothing: the next entry is then
// a plain delta, which is always right.
func (h Head) WithCarry(data []byte) Head {
	h.carry = nil
	var c carry
	if len(data) == 0 || json.Unmarshal(data, &c) != nil || h.Manifest == nil || c.Base > h.Manifest.Seq {
		return h
	}
	if !slices.IsSorted(c.Shards) || !slices.IsSorted(c.Fences) {
		return h
	}
	h.carry = &c
	return h
}

// cumulate makes d, the plain delta from base to n, cumulative from
// base's carry, and returns the carry of the head n; every is the
// writer's checkpoint cadence.
func cumulate(d *logDelta, base Head, n *Manifest, every int) *carry {
	if every <= 0 {
		every = DefaultCheckpointEvery
	}
	if d.Reset {
		return nil
	}
	c := base.carry
	if c == nil || c.Base+1 == n.Seq || c.Base >= n.Seq {
		// A plain delta: its own keys are what changed since seq-1.
		c = &carry{Base: n.Seq - 1}
	}
	shards := map[string]bool{}
	for _, k := range c.Shards {
		shards[k] = true
	}
	for _, r := range d.Set {
		shards[r.Lo] = true
	}
	for _, k := range d.Del {
		shards[k] = true
	}
	fences := map[string]bool{}
	for _, k := range c.Fences {
		fences[k] = true
	}
	for k := range d.Fences {
		fences[k] = true
	}
	for _, k := range d.Unfence {
		fences[k] = true
	}
	if c.Base+1 < n.Seq && len(shards) > maxTouched {
		// Too much since the base to carry: the plain delta, and the
		// base rolls here. (A plain delta over the bound, a bulk commit
		// on its predecessor, rolls with the next commit: the commit
		// that made it pays no checkpoint.)
		d.Checkpoint = true
		return rolled(n.Seq)
	}
	if c.Base+1 < n.Seq {
		b := c.Base
		d.Base = &b
		// At most maxTouched keys, each looked up in the sorted lists: a
		// commit's cost here does not grow with the bucket.
		d.Set, d.Gone = nil, nil
		for _, k := range slices.Sorted(maps.Keys(shards)) {
			if r, ok := refAt(n.Shards, k); ok {
				d.Set = append(d.Set, r)
			} else if _, ok := refAt(base.Manifest.Shards, k); !ok {
				d.Gone = append(d.Gone, k)
			}
		}
		d.Fences, d.Unfence = nil, nil
		for _, k := range slices.Sorted(maps.Keys(fences)) {
			if v, ok := n.Fences[k]; ok {
				if d.Fences == nil {
					d.Fences = map[string]uint64{}
				}
				d.Fences[k] = v
			} else {
				d.Unfence = append(d.Unfence, k)
			}
		}
	}
	if n.Seq%uint64(every) == 0 {
		d.Checkpoint = true
		return rolled(n.Seq)
	}
	return &carry{Base: c.Base, Shards: slices.Sorted(maps.Keys(shards)), Fences: slices.Sorted(maps.Keys(fences))}
}

// refAt returns the ref of refs (ascending by Lo) whose Lo is lo.
func refAt(refs []ShardRef, lo string) (ShardRef, bool) {
	i, ok := slices.BinarySearchFunc(refs, lo, func(r ShardRef, lo string) int { return strings.Compare(r.Lo, lo) })
	if !ok {
		return ShardRef{}, false
	}
	return refs[i], true
}

// carryOf is the carry of the head entry d makes, as its reader learns it.
func carryOf(d *logDelta) *carry {
	switch {
	case d.Reset || d.Checkpoint:
		return rolled(d.Seq)
	case d.Seq == genesisSeq:
		return nil
	}
	c := &carry{Base: d.Seq - 1}
	if d.Base != nil {
		c.Base = *d.Base
	}
	shards := slices.Concat(d.Del, d.Gone)
	for _, r := range d.Set {
		shards = append(shards, r.Lo)
	}
	fences := slices.Clone(d.Unfence)
	for k := range d.Fences {
		fences = append(fences, k)
	}
	slices.Sort(shards)
	slices.Sort(fences)
	c.Shards, c.Fences = slices.Compact(shards), slices.Compact(fences)
	return c
}

// logBlockPrefix is the key prefix of the entries of seq's block.
func logBlockPrefix(seq uint64) string {
	return strings.TrimSuffix(LogKey(seq), historySuffix)[:len(LogPrefix)+historySeqWidth-3]
}

// jumpCold reads the head of a DeltaFormat bucket from h, the state of a
// checkpoint C (the hint's), in two requests whatever the entries since
// C: a listing of C's block of the log, then its newest entry N, applied
// to h when it is cumulative from C or below (or from a checkpoint read
// for it). done says the head is settled: the listing, sent before N was
// read, saw no N+1. Otherwise the caller walks on from the head returned
// (h itself when nothing could be jumped).
func jumpCold(ctx context.Context, b backend.Backend, h Head, now func() time.Time) (Head, bool, error) {
	c := h.Manifest.Seq
	sent := now()
	objs, err := listAll(ctx, b, logBlockPrefix(c))
	if err != nil {
		return Head{}, false, fmt.Errorf("list log: %w", err)
	}
	newest, listed := c, false
	for _, o := range objs {
		if seq, ok := ParseLogKey(o.Key); ok {
			listed = listed || seq == c
			newest = max(newest, seq)
		}
	}
	last := func(seq uint64) bool { return seq%logBlock == logBlock-1 }
	if newest == c {
		// C's own entry listed without a successor: C+1 was absent when
		// the listing was sent (gc deletes entries oldest first, so it
		// was not collected). Without C listed, the block may be one gc
		// emptied below a newer log: walk.
		if !listed || last(c) {
			return h, false, nil
		}
		h.Version = logVersion(c, sent)
		return h, true, nil
	}
	data, info, ok, err := readLogRaw(ctx, b, newest)
	if err != nil {
		return Head{}, false, err
	}
	var d logDelta
	if !ok || !isDelta(data) || json.Unmarshal(data, &d) != nil || d.Seq != newest {
		return h, false, nil
	}
	start := h
	if d.Seq > c+1 && (d.Base == nil || *d.Base > c) {
		if d.Base == nil || *d.Base >= d.Seq {
			return h, false, nil
		}
		cp, ok, err := readCheckpoint(ctx, b, *d.Base)
		if unreadable(err) || err == nil && !ok {
			return h, false, nil
		}
		if err != nil {
			return Head{}, false, err
		}
		start = cp
	}
	m, state, err := applyDecoded(LogKey(newest), start, &d)
	if errors.Is(err, ErrCorruptIndex) || errors.Is(err, errNoBase) {
		// The walk reads entry by entry, and says what is wrong if
		// anything is.
		return h, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	n := Head{Manifest: m, Data: state, Version: logVersion(newest, sent), Info: info, carry: carryOf(&d)}
	return n, !last(newest), nil
}
