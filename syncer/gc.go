package syncer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
)

// DefaultGCOlderThan is the age the command line requires of an
// unreferenced object before gc removes it: long enough for any push to
// commit what it uploaded and any reader to finish with the snapshot it
// opened.
const DefaultGCOlderThan = time.Hour

// GCOptions modify a GC.
type GCOptions struct {
	// OlderThan is the age an unreferenced object must have reached before
	// it is removed, by its ModTime. Zero removes unreferenced objects
	// however new, which can break a push that has uploaded but not yet
	// committed; callers normally pass DefaultGCOlderThan.
	OlderThan time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// Now is the clock ages are measured by; nil means time.Now.
	Now func() time.Time
}

// GCObject is one object GC removed (or, in a dry run, would remove).
type GCObject struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// GCReport is what GC found and did.
type GCReport struct {
	// Seq is the manifest sequence the referenced set was read from.
	Seq uint64 `json:"seq"`
	// Shards are the index shard objects no manifest references.
	Shards []GCObject `json:"shards"`
	// Data are the data objects no committed entry references.
	Data []GCObject `json:"data"`
	// Bytes is the total size of Shards and Data.
	Bytes int64 `json:"bytes"`
	// Recent counts unreferenced objects kept because they are younger
	// than GCOptions.OlderThan (or of unknown age).
	Recent int `json:"recent"`
	// Changed counts objects kept because they changed between the
	// listing and the delete (a conditional delete failed).
	Changed int `json:"changed"`
	// Namespaces lists the namespaces found under this root; their keys
	// belong to their own index and are never collected from here.
	Namespaces []string `json:"namespaces,omitempty"`
	// DryRun is true when nothing was removed.
	DryRun bool `json:"dry_run"`
}

// GC removes garbage from the namespace root b (apply a namespace with
// backend.Prefixed first): shard objects the current manifest does not
// reference and data objects no committed entry references, each only once
// it is older than opts.OlderThan. It never removes the manifest, anything
// under .silt/ other than shards (control records, locks), or any key of a
// namespace nested under this root (a first segment holding its own .silt/).
//
// The referenced set is the union of the manifest read before the listing
// and the one read after it, so a commit landing meanwhile keeps what it
// references; deletes are conditional on the listed version where the
// backend supports it, so an object rewritten meanwhile is kept.
func GC(ctx context.Context, b backend.Backend, opts GCOptions) (GCReport, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	rep := GCReport{DryRun: opts.DryRun, Shards: []GCObject{}, Data: []GCObject{}}
	refs := gcRefs{shards: map[string]bool{}, data: map[string]bool{}}
	first, err := refs.add(ctx, b, nil)
	if err != nil {
		return rep, err
	}
	rep.Seq = first.m.Seq

	cutoff := now().Add(-opts.OlderThan)
	var shardCands, dataCands []backend.ObjectInfo
	namespaces := map[string]bool{}
	err = b.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			kind, ns := classifyGCKey(o.Key)
			if ns != "" && !namespaces[ns] {
				namespaces[ns] = true
				rep.Namespaces = append(rep.Namespaces, ns)
			}
			if kind == gcKeep {
				continue
			}
			if opts.OlderThan > 0 && (o.ModTime.IsZero() || o.ModTime.After(cutoff)) {
				if !refs.has(kind, o.Key) {
					rep.Recent++
				}
				continue
			}
			if kind == gcShard {
				shardCands = append(shardCands, o)
			} else {
				dataCands = append(dataCands, o)
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("gc: list: %w", err)
	}
	// A commit may have landed during the listing: what it references is
	// kept too.
	if _, err := refs.add(ctx, b, &first); err != nil {
		return rep, err
	}
	condDelete := b.Capabilities().ConditionalDelete
	remove := func(kind gcKind, o backend.ObjectInfo, out *[]GCObject) error {
		if refs.has(kind, o.Key) {
			return nil
		}
		if kind == gcData {
			if ns, _, ok := strings.Cut(o.Key, "/"); ok && namespaces[ns] {
				return nil
			}
		}
		if !opts.DryRun {
			var c backend.Cond
			if condDelete {
				c.IfMatch = o.Version
			}
			err := b.Delete(ctx, o.Key, c)
			switch {
			case backend.IsPrecondition(err):
				rep.Changed++
				return nil
			case err != nil && !backend.IsNotExist(err):
				return fmt.Errorf("gc: delete %q: %w", o.Key, err)
			}
		}
		*out = append(*out, GCObject{Key: o.Key, Size: o.Size, ModTime: o.ModTime})
		rep.Bytes += o.Size
		return nil
	}
	for _, o := range shardCands {
		if err := remove(gcShard, o, &rep.Shards); err != nil {
			return rep, err
		}
	}
	for _, o := range dataCands {
		if err := remove(gcData, o, &rep.Data); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

type gcKind int

const (
	gcKeep  gcKind = iota // never collected
	gcShard               // an index shard object
	gcData                // a data object of this root
)

// classifyGCKey says what key is to GC and, when key lies in a nested
// namespace (its first segment holds a .silt/ of its own), names it.
func classifyGCKey(key string) (gcKind, string) {
	if isInternal(key) {
		if id, ok := strings.CutPrefix(key, shardsPrefix); ok && strings.HasSuffix(id, ".json") && !strings.Contains(id, "/") {
			return gcShard, ""
		}
		return gcKeep, "" // the manifest, control records, locks, anything else of silt's
	}
	if first, rest, ok := strings.Cut(key, "/"); ok && isInternal(rest) {
		return gcKeep, first
	}
	if strings.Contains(key, "/"+InternalDir+"/") {
		return gcKeep, "" // some deeper silt directory: not ours to judge
	}
	return gcData, ""
}

// gcRefs is the set of shards and data keys some manifest read by GC
// references.
type gcRefs struct {
	shards map[string]bool // shard keys
	data   map[string]bool // data keys
}

func (r *gcRefs) has(kind gcKind, key string) bool {
	if kind == gcShard {
		return r.shards[key]
	}
	return r.data[key]
}

// add reads the current manifest and adds what it references. When prev is
// the manifest read before at the same version, nothing is read again.
func (r *gcRefs) add(ctx context.Context, b backend.Backend, prev *snapshot) (snapshot, error) {
	snap, err := readManifest(ctx, b)
	if err != nil {
		return snap, fmt.Errorf("gc: %w", err)
	}
	if prev != nil && prev.version == snap.version {
		return snap, nil
	}
	s := &Snapshot{b: b, snap: snap}
	for _, ref := range snap.m.Shards {
		key := shardKey(ref.ID)
		if r.shards[key] {
			continue // immutable: its entries are already counted
		}
		r.shards[key] = true
		entries, err := s.shard(ctx, ref.ID)
		if err != nil {
			return snap, fmt.Errorf("gc: %w", err)
		}
		for p := range entries {
			r.data[p] = true
		}
	}
	return snap, nil
}
