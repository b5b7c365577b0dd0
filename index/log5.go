package index

// Format 5: log entries that hold a delta (FORMAT.md, "Log entries" and
// "Checkpoints"). Entry N holds the shard entries that changed from N-1, the
// fences that changed, prev (the sha256 of the state N-1) and state (the
// sha256 of the state N). The state of N is the manifest a format-4 entry
// would hold, with format 5: a reader applies the delta to the state it
// holds and checks the result against state, so a wrong delta, a forked
// log or a reader's own bug is refused, never read as the index. Head.Data
// of a DeltaFormat head is the state's bytes, so everything that compares,
// hashes or keeps a head's bytes treats both log formats alike.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
)

// logDelta is a DeltaFormat log entry.
type logDelta struct {
	Format int    `json:"format"`
	Seq    uint64 `json:"seq"`
	Prev   string `json:"prev,omitempty"`
	State  string `json:"state"`
	// Set holds the shard references that are new or changed, ascending
	// by Lo; Del the Lo of each shard that is gone.
	Set []ShardRef `json:"set,omitempty"`
	Del []string   `json:"del,omitempty"`
	// Fences holds the fences that are new or changed; Unfence the keys
	// of fences that are gone.
	Fences  map[string]uint64 `json:"fences,omitempty"`
	Unfence []string          `json:"unfence,omitempty"`
	// Reset says the state is Set and Fences alone, whatever the base
	// held: what recover writes on a head whose state does not read.
	Reset bool `json:"reset,omitempty"`
	// Base, when set, makes the entry cumulative (cumulative.go): Set,
	// Fences and Unfence hold everything touched since the state of Base,
	// Gone the shards touched since Base that neither seq-1 nor seq holds,
	// so the entry applies to any state from Base to seq-1. Del stays the
	// shards of seq-1 that seq drops, so a reader that applies entries one
	// by one (an older silt) reads it as the plain delta it also is.
	Base *uint64  `json:"base,omitempty"`
	Gone []string `json:"gone,omitempty"`
	// Checkpoint says the writer checkpoints this seq after it: the
	// entries after it take it as their base.
	Checkpoint bool `json:"checkpoint,omitempty"`
	// The bounds are the state's, carried whole: a few bytes.
	ShardMaxEntries int `json:"shard_max_entries,omitempty"`
	ShardMaxBytes   int `json:"shard_max_bytes,omitempty"`
}

// errNoBase: a delta cannot be applied without the bytes of the state it
// builds on.
var errNoBase = errors.New("a log delta read without its base state")

// stateHash is the sha256 of h's state bytes: of Data, or, for a head
// whose state does not read, the hash its own entry names.
func (h Head) stateHash() string {
	if h.Data == nil {
		return h.sum
	}
	return hashHex(h.Data)
}

// diffState returns the delta entry that takes base to the state n (a
// reset when base's state is not held), cumulative when base carries
// what changed since its base, and the carry of the head it makes; every
// is the writer's checkpoint cadence.
func diffState(base Head, n *Manifest, stateData []byte, every int) (*logDelta, *carry) {
	d := plainDiff(base, n, stateData)
	return d, cumulate(d, base, n, every)
}

// plainDiff is the delta from base to n alone.
func plainDiff(base Head, n *Manifest, stateData []byte) *logDelta {
	d := &logDelta{Format: n.Format, Seq: n.Seq, Prev: n.Prev, State: hashHex(stateData), ShardMaxEntries: n.ShardMaxEntries, ShardMaxBytes: n.ShardMaxBytes}
	if base.Data == nil && base.Manifest.Seq != genesisSeq {
		d.Reset, d.Set, d.Fences = true, n.Shards, n.Fences
		return d
	}
	a, b := base.Manifest.Shards, n.Shards
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].Lo < b[j].Lo:
			d.Del = append(d.Del, a[i].Lo)
			i++
		case i == len(a) || b[j].Lo < a[i].Lo:
			d.Set = append(d.Set, b[j])
			j++
		default:
			if a[i] != b[j] {
				d.Set = append(d.Set, b[j])
			}
			i++
			j++
		}
	}
	for k, v := range n.Fences {
		if old, ok := base.Manifest.Fences[k]; !ok || old != v {
			if d.Fences == nil {
				d.Fences = map[string]uint64{}
			}
			d.Fences[k] = v
		}
	}
	for k := range base.Manifest.Fences {
		if _, ok := n.Fences[k]; !ok {
			d.Unfence = append(d.Unfence, k)
		}
	}
	slices.Sort(d.Unfence)
	return d
}

// encodeDelta returns the bytes of d.
func encodeDelta(d *logDelta) []byte {
	data, err := json.Marshal(d)
	if err != nil {
		panic(err) // plain data types only
	}
	return data
}

// applyDelta applies the entry data at key to base (the head of seq-1 with
// its bytes, or of a seq from the entry's Base on for a cumulative one)
// and returns the state it commits, checked against the entry's own hash
// of it, and the carry of that head.
func applyDelta(key string, base Head, data []byte) (*Manifest, []byte, *carry, error) {
	var d logDelta
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, nil, nil, corrupt(key, "%v", err)
	}
	n, state, err := applyDecoded(key, base, &d)
	if err != nil {
		return nil, nil, nil, err
	}
	return n, state, carryOf(&d), nil
}

// applyDecoded is applyDelta of the decoded entry d.
func applyDecoded(key string, base Head, d *logDelta) (*Manifest, []byte, error) {
	if !isDeltaLog(d.Format) {
		return nil, nil, corrupt(key, "a log delta in format %d", d.Format)
	}
	if base.Manifest != nil && base.Manifest.Seq != genesisSeq && isDeltaLog(base.Manifest.Format) && d.Format < base.Manifest.Format {
		// A migration moves a bucket forward only: an entry in format 5
		// after one in 6 was written by a silt that did not read the log.
		return nil, nil, corrupt(key, "a log delta in format %d after one in format %d", d.Format, base.Manifest.Format)
	}
	if base.Manifest == nil || base.Data == nil && (base.sum == "" || !d.Reset) {
		return nil, nil, errNoBase
	}
	// A jump: a cumulative entry applied to a state below seq-1, whose
	// hash it does not name; the state it makes is checked all the same.
	jump := d.Base != nil && !d.Reset && *d.Base <= base.Manifest.Seq && base.Manifest.Seq+1 < d.Seq
	if d.Seq != base.Manifest.Seq+1 && !jump {
		return nil, nil, corrupt(key, "holds seq %d, not the successor of %d", d.Seq, base.Manifest.Seq)
	}
	want := ""
	if base.Manifest.Seq != genesisSeq {
		want = base.stateHash()
	}
	if d.Prev != want && !jump {
		return nil, nil, corrupt(key, "does not build on the entry of seq %d this reader holds (a forked log)", base.Manifest.Seq)
	}
	if !ValidSHA256(d.State) {
		return nil, nil, corrupt(key, "bad state %q", d.State)
	}
	if !slices.IsSortedFunc(d.Set, func(a, b ShardRef) int { return strings.Compare(a.Lo, b.Lo) }) {
		return nil, nil, corrupt(key, "set not in key order")
	}
	n := &Manifest{Format: d.Format, Seq: d.Seq, Prev: d.Prev, ShardMaxEntries: d.ShardMaxEntries, ShardMaxBytes: d.ShardMaxBytes}
	del := make(map[string]bool, len(d.Del)+len(d.Gone))
	for _, lo := range d.Del {
		del[lo] = true
	}
	// What Gone names is in no state from seq-1 on; a jumping reader's
	// older state may hold it, or anything Del names may be gone there
	// already: only the check of the state's hash below counts then.
	strict := len(del)
	if jump {
		strict = -1
	}
	for _, lo := range d.Gone {
		del[lo] = true
	}
	a, b := base.Manifest.Shards, d.Set
	if d.Reset {
		if len(d.Del) > 0 || len(d.Unfence) > 0 {
			return nil, nil, corrupt(key, "a reset that deletes")
		}
		a, del = nil, nil
	}
	n.Shards = make([]ShardRef, 0, len(a)+len(b))
	i, j, dropped := 0, 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].Lo < b[j].Lo:
			if del[a[i].Lo] {
				dropped++
			} else {
				n.Shards = append(n.Shards, a[i])
			}
			i++
		case i == len(a) || b[j].Lo < a[i].Lo:
			n.Shards = append(n.Shards, b[j])
			j++
		default:
			n.Shards = append(n.Shards, b[j])
			i++
			j++
		}
	}
	if strict >= 0 && dropped < strict {
		return nil, nil, corrupt(key, "deletes a shard the state of seq %d does not hold", base.Manifest.Seq)
	}
	fences := map[string]uint64{}
	if !d.Reset {
		maps.Copy(fences, base.Manifest.Fences)
	}
	maps.Copy(fences, d.Fences)
	for _, k := range d.Unfence {
		delete(fences, k)
	}
	if len(fences) > 0 {
		n.Fences = fences
	}
	state := EncodeManifest(n)
	if hashHex(state) != d.State {
		return nil, nil, corrupt(key, "the state it makes on seq %d is not the one it names", base.Manifest.Seq)
	}
	if err := checkState(key, n); err != nil {
		return nil, nil, err
	}
	return n, state, nil
}

// entryFormat returns the format field of log entry bytes (0 when they do
// not decode), to tell a format-4 manifest from a format-5 delta.
func entryFormat(data []byte) int {
	var f struct {
		Format int `json:"format"`
	}
	if json.Unmarshal(data, &f) != nil {
		return 0
	}
	return f.Format
}

// continuedTo reports whether the log entries at lists the deltas from
// c+1 up to top: the states above checkpoint c up to top can be read
// from it.
func continuedTo(at map[uint64]backend.ObjectInfo, c, top uint64) bool {
	for k := c + 1; k <= top; k++ {
		if _, ok := at[k]; !ok {
			return false
		}
	}
	return true
}

// isDelta reports whether log entry bytes are a DeltaFormat delta.
func isDelta(data []byte) bool {
	return isDeltaLog(entryFormat(data)) && bytes.Contains(data, []byte(`"state"`))
}

// readState returns the DeltaFormat snapshot of seq: the newest checkpoint
// at or below it that reads, with the deltas above it applied. A snapshot
// whose deltas gc removed matches backend.ErrNotExist.
func readState(ctx context.Context, b backend.Backend, seq uint64) (Head, error) {
	cps, _, err := listCheckpoints(ctx, b)
	if err != nil {
		return Head{}, fmt.Errorf("read snapshot %d: %w", seq, err)
	}
	starts := []uint64{genesisSeq}
	for _, c := range cps {
		if c <= seq {
			starts = append(starts, c)
		}
	}
	cur, found, last, err := firstThatReads(ctx, b, slices.Backward(starts), nil)
	if err != nil {
		return Head{}, err
	}
	if !found {
		return Head{}, fmt.Errorf("read snapshot %d: no checkpoint at or below it reads: %w", seq, last)
	}
	for cur.Manifest.Seq < seq {
		next, ok, err := readNext(ctx, b, cur, time.Time{})
		if err != nil {
			return Head{}, err
		}
		if !ok {
			return Head{}, fmt.Errorf("read log entry %d: %w", cur.Manifest.Seq+1, backend.ErrNotExist)
		}
		cur = next
	}
	return cur, nil
}

// firstThatReads returns the state of the first of starts (checkpoint
// seqs; 0 the genesis) that keep accepts (nil: every one) and that reads,
// skipping those that do not read (last: the last such error); a failed
// request is err.
func firstThatReads(ctx context.Context, b backend.Backend, starts iter.Seq2[int, uint64], keep func(uint64) bool) (h Head, found bool, last, err error) {
	for _, c := range starts {
		if keep != nil && !keep(c) {
			continue
		}
		h, err := startAt(ctx, b, c)
		if unreadable(err) {
			last = err
			continue
		}
		return h, err == nil, last, err
	}
	return Head{}, false, last, nil
}

// startAt returns the state of checkpoint c, or the genesis for c = 0.
func startAt(ctx context.Context, b backend.Backend, c uint64) (Head, error) {
	if c == genesisSeq {
		// Entry 1 names no prev, so the genesis's format is no one's:
		// the entries say theirs.
		_, g := genesisDelta(DefaultFormat)
		return g, nil
	}
	h, ok, err := readCheckpoint(ctx, b, c)
	if err == nil && !ok {
		err = fmt.Errorf("read checkpoint %d: %w", c, backend.ErrNotExist)
	}
	return h, err
}

// resolveDelta finds the head of a DeltaFormat bucket whose log listed
// the entries at, newest newest (sent at sent): the newest checkpoint
// that reads and that the listed entries continue, read forward. The
// listing showed no entry above newest, so sent is an observation of its
// successor being absent, and of anything newer.
func resolveDelta(ctx context.Context, b backend.Backend, at map[uint64]backend.ObjectInfo, newest uint64, sent time.Time, now func() time.Time) (Head, bool, error) {
	cps, _, err := listCheckpoints(ctx, b)
	if err != nil {
		return Head{}, false, fmt.Errorf("list checkpoints: %w", err)
	}
	starts := append([]uint64{genesisSeq}, cps...)
	continued := func(c uint64) bool { return continuedTo(at, c, newest) }
	h, found, last, err := firstThatReads(ctx, b, slices.Backward(starts), continued)
	if err != nil {
		return Head{}, false, err
	}
	if found {
		h.Version = logVersion(h.Manifest.Seq, sent)
		h, _, err = walkLog(ctx, b, h, now)
		return h, true, err
	}
	return Head{}, false, corrupt(LogPrefix, "no checkpoint that reads is continued by the log (last: %v)", last)
}

// deltaLog appends the DeltaFormat snapshots below cur, newest first:
// every state from the lowest checkpoint (or the genesis) the log
// continues, read forward; an entry superseded when its successor was
// written.
func deltaLog(ctx context.Context, b backend.Backend, cur Head, out []LogEntry) ([]LogEntry, error) {
	_, at, err := logSeqs(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	cps, _, err := listCheckpoints(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	starts := append([]uint64{genesisSeq}, cps...)
	var older []LogEntry
	h, found, _, err := firstThatReads(ctx, b, slices.All(starts), func(c uint64) bool {
		return c < cur.Manifest.Seq && continuedTo(at, c, cur.Manifest.Seq-1)
	})
	for found && err == nil {
		if h.Manifest.Seq != genesisSeq {
			older = append(older, LogEntry{Seq: h.Manifest.Seq, Entries: h.Manifest.Entries(), Shards: len(h.Manifest.Shards), Superseded: at[h.Manifest.Seq+1].ModTime})
		}
		if h.Manifest.Seq+1 >= cur.Manifest.Seq {
			break
		}
		h, found, err = readNext(ctx, b, h, time.Time{}) // not found: collected meanwhile
	}
	if err != nil {
		return nil, err
	}
	slices.Reverse(older)
	return append(out, older...), nil
}

// unreadHead returns the newest entry of a DeltaFormat log as a head whose
// state is not held (only its hash, from the entry), observed at the
// listing that found it: what recover commits a reset on when no
// checkpoint the log continues reads.
func unreadHead(ctx context.Context, b backend.Backend, now func() time.Time) (Head, error) {
	sent := now()
	seqs, _, err := logSeqs(ctx, b)
	if err != nil {
		return Head{}, err
	}
	if len(seqs) == 0 {
		return Head{}, fmt.Errorf("list log: %w", backend.ErrNotExist)
	}
	seq := seqs[len(seqs)-1]
	data, _, ok, err := readLogRaw(ctx, b, seq)
	if err != nil {
		return Head{}, err
	}
	var d logDelta
	if !ok || !isDelta(data) || json.Unmarshal(data, &d) != nil || d.Seq != seq || !ValidSHA256(d.State) {
		return Head{}, corrupt(LogKey(seq), "not a log delta")
	}
	return Head{Manifest: &Manifest{Format: d.Format, Seq: seq, Shards: []ShardRef{}}, Version: logVersion(seq, sent), sum: d.State}, nil
}
