package index

// Format 4, the log (FORMAT.md, "Reading older formats", "Format 4"). The commit of seq N
// is the create-if-absent of LogKey(N), holding the manifest of N;
// manifest.json is a hint a reader starts from, never the truth. Creates
// of distinct keys are not mutations of one object, so a store's per-object
// write limit (GCS: about one a second) no longer caps commits.
//
// The head is the entry N whose successor is absent. "Absent" is only
// evidence while no gc can have deleted the successor: gc deletes entry K
// only once K+1 is more than MinLogGrace old and every entry below K is
// gone. So a reader that has seen, at time T, that N+1 did not exist yet
// may take a later absence of N+1 as "nothing newer" until T+LogTrust
// (LogTrust is well under MinLogGrace), one request; past that, it checks
// that N itself is still there after the absent read (a second request),
// and falls back to a listing when N is gone too.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/siltsync/silt/backend"
)

const (
	// MinLogGrace is the least age of its successor at which gc deletes a
	// log entry, whatever its grace period.
	MinLogGrace = time.Hour
	// LogTrust is how long a reader takes an absent successor as "nothing
	// newer" after it last saw the successor absent (or created its
	// entry). The margin to MinLogGrace absorbs clock skew between
	// readers, gc and the store.
	LogTrust = 20 * time.Minute
	// HintEvery: a writer rewrites the hint after committing a seq that is
	// a multiple of it, so the hint's own write rate stays under a
	// per-object limit while commits go faster.
	HintEvery = 16
	// logJumpAfter is how many entries a reader reads forward before it
	// reads the hint to skip ahead.
	logJumpAfter = 2 * HintEvery
)

// genesisSeq is the seq of the hint a LogFormat bucket is created with:
// the empty index, whose successor is the first commit.
const genesisSeq = 0

// logVersion is the version a LogFormat Head carries: its seq and when
// this reader last knew that seq+1 did not exist yet (zero: unknown).
func logVersion(seq uint64, observed time.Time) backend.Version {
	ns := int64(0)
	if !observed.IsZero() {
		ns = observed.UnixNano()
	}
	return backend.Version("log:" + strconv.FormatUint(seq, 10) + "@" + strconv.FormatInt(ns, 10))
}

// parseLogVersion reads a logVersion.
func parseLogVersion(v backend.Version) (seq uint64, observed time.Time, ok bool) {
	s, ok := strings.CutPrefix(string(v), "log:")
	if !ok {
		return 0, time.Time{}, false
	}
	a, b, ok := strings.Cut(s, "@")
	if !ok {
		return 0, time.Time{}, false
	}
	seq, err1 := strconv.ParseUint(a, 10, 64)
	ns, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, time.Time{}, false
	}
	if ns != 0 {
		observed = time.Unix(0, ns)
	}
	return seq, observed, true
}

// IsLogVersion reports whether v is the version of a LogFormat head (what
// a reader holding a head can tell without decoding its bytes).
func IsLogVersion(v backend.Version) bool {
	_, _, ok := parseLogVersion(v)
	return ok
}

// IsLog reports whether h is the head of a LogFormat bucket.
func (h Head) IsLog() bool { return h.Manifest != nil && h.Manifest.Format >= LogFormat }

// Observed returns, for a LogFormat head, when its reader last knew that
// no newer entry existed (zero when unknown or not a log head).
func (h Head) Observed() time.Time {
	_, t, _ := parseLogVersion(h.Version)
	return t
}

// Same reports whether h and o are one head: the same seq and bytes,
// whenever and by whom each was observed.
func (h Head) Same(o Head) bool {
	return h.Manifest != nil && o.Manifest != nil && h.Manifest.Seq == o.Manifest.Seq && bytes.Equal(h.Data, o.Data)
}

// fresh reports whether h's observation still proves an absent successor.
func (h Head) fresh(now time.Time) bool {
	t := h.Observed()
	return !t.IsZero() && !now.Before(t) && now.Sub(t) < LogTrust
}

// hashHex is the sha256 of data, hex.
func hashHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// genesis returns the bytes of a LogFormat bucket's first hint.
func genesis() []byte {
	return EncodeManifest(&Manifest{Format: LogFormat, Seq: genesisSeq, Shards: []ShardRef{}})
}

// genesisOf returns the first hint (and marker) of a bucket of a log
// format, and the head it stands for.
func genesisOf(format int) ([]byte, Head) {
	if isDeltaLog(format) {
		return genesisDelta(format)
	}
	g := genesis()
	m, _ := DecodeManifest(ManifestKey, g)
	return g, Head{Manifest: m, Data: g}
}

// readLogRaw reads the bytes of the entry at seq; ok is false when it is
// absent.
func readLogRaw(ctx context.Context, b backend.Backend, seq uint64) ([]byte, backend.ObjectInfo, bool, error) {
	data, info, err := readBounded(ctx, b, LogKey(seq), backend.GetOptions{}, MaxManifestBytes)
	if backend.IsNotExist(err) {
		return nil, info, false, nil
	}
	if err != nil {
		return nil, info, false, fmt.Errorf("read log entry %d: %w", seq, err)
	}
	return data, info, true, nil
}

// decodeLogEntry decodes the bytes of a format-4 entry at seq.
func decodeLogEntry(seq uint64, data []byte, info backend.ObjectInfo, observed time.Time) (Head, error) {
	key := LogKey(seq)
	if isDelta(data) {
		return Head{}, errNoBase
	}
	m, err := DecodeManifest(key, data)
	if err != nil {
		return Head{}, err
	}
	if m.Seq != seq || m.Format < LogFormat {
		return Head{}, corrupt(key, "holds seq %d in format %d", m.Seq, m.Format)
	}
	return Head{Manifest: m, Data: data, Version: logVersion(seq, observed), Info: info}, nil
}

// readLogEntry reads the format-4 entry at seq; ok is false when it is
// absent. A format-5 entry is errNoBase: its state needs its predecessor's.
func readLogEntry(ctx context.Context, b backend.Backend, seq uint64, observed time.Time) (h Head, ok bool, err error) {
	data, info, ok, err := readLogRaw(ctx, b, seq)
	if err != nil || !ok {
		return Head{}, ok, err
	}
	h, err = decodeLogEntry(seq, data, info, observed)
	return h, err == nil, err
}

// readNext reads the successor of cur, the head this reader holds with its
// bytes, and returns the head it commits: a format-4 entry checked to
// build on cur, or a format-5 delta applied to cur.
func readNext(ctx context.Context, b backend.Backend, cur Head, observed time.Time) (Head, bool, error) {
	seq := cur.Manifest.Seq + 1
	data, info, ok, err := readLogRaw(ctx, b, seq)
	if err != nil || !ok {
		return Head{}, ok, err
	}
	if isDelta(data) {
		m, state, c, err := applyDelta(LogKey(seq), cur, data)
		if err != nil {
			return Head{}, false, err
		}
		return Head{Manifest: m, Data: state, Version: logVersion(seq, observed), Info: info, carry: c}, true, nil
	}
	next, err := decodeLogEntry(seq, data, info, observed)
	if err != nil {
		return Head{}, false, err
	}
	if err := follows(cur, next); err != nil {
		return Head{}, false, err
	}
	return next, true, nil
}

// ReadLogEntry reads the snapshot committed at seq in a LogFormat or
// DeltaFormat bucket; an entry gc removed (or never written) matches
// backend.ErrNotExist. In DeltaFormat the snapshot is the state of the
// newest checkpoint at or below seq with the deltas above it applied.
func ReadLogEntry(ctx context.Context, b backend.Backend, seq uint64) (Head, error) {
	h, ok, err := readLogEntry(ctx, b, seq, time.Time{})
	if errors.Is(err, errNoBase) {
		return readState(ctx, b, seq)
	}
	if err == nil && !ok {
		// A DeltaFormat snapshot gc took out of the log may still be a
		// checkpoint.
		if h, ok, cerr := readCheckpoint(ctx, b, seq); cerr == nil && ok {
			return h, nil
		}
		err = fmt.Errorf("read log entry %d: %w", seq, backend.ErrNotExist)
	}
	return h, err
}

// follows checks that next builds on cur (whose bytes the reader holds).
func follows(cur, next Head) error {
	if cur.Manifest.Seq == genesisSeq || cur.Data == nil {
		return nil
	}
	if next.Manifest.Prev != hashHex(cur.Data) {
		return corrupt(LogKey(next.Manifest.Seq), "does not build on the entry of seq %d this reader holds (a forked log)", cur.Manifest.Seq)
	}
	return nil
}

// walkLog reads forward from known, the head as this reader holds it,
// until an entry is absent, and returns the head with its observation
// stamped; moved is true when it is newer than known.
func walkLog(ctx context.Context, b backend.Backend, known Head, now func() time.Time) (Head, bool, error) {
	cur, moved := known, false
	fresh := known.fresh(now())
	for steps := 0; ; steps++ {
		if cur.Manifest.Seq >= MaxSeq {
			return cur, moved, nil
		}
		jump := logJumpAfter
		if isDeltaLog(cur.Manifest.Format) {
			jump = jumpAfter5 // a checkpoint costs its pages, a delta one small read
		}
		if steps == jump {
			if h, err := readHint(ctx, b); err == nil && h.IsLog() && h.Manifest.Seq > cur.Manifest.Seq {
				cur, fresh = h, false // the jump skips the prev check of the entries between
			}
		}
		sent := now()
		next, ok, err := readNext(ctx, b, cur, sent)
		if errors.Is(err, errNoBase) {
			// A delta on a head known only by its seq: read it whole.
			h, err := readHead(ctx, b, backend.GetOptions{}, now)
			return h, err == nil, err
		}
		if err != nil {
			return Head{}, false, err
		}
		if ok {
			cur, moved = next, true
			continue
		}
		if !fresh {
			// An old observation proves nothing: gc may have deleted the
			// successor. cur still there after the absent read proves it
			// did not (gc deletes in seq order).
			if cur.Manifest.Seq == genesisSeq {
				return resolveByList(ctx, b, now)
			}
			_, err := b.Stat(ctx, LogKey(cur.Manifest.Seq))
			if backend.IsNotExist(err) {
				return resolveByList(ctx, b, now)
			}
			if err != nil {
				return Head{}, false, fmt.Errorf("read log entry %d: %w", cur.Manifest.Seq, err)
			}
		}
		cur.Version = logVersion(cur.Manifest.Seq, sent)
		return cur, moved, nil
	}
}

// resolveByList finds the head from a listing of the log: the reader's
// position (or the hint) is below what gc kept, or the hint is gone.
func resolveByList(ctx context.Context, b backend.Backend, now func() time.Time) (Head, bool, error) {
	sent := now()
	seqs, at, err := logSeqs(ctx, b)
	if err != nil {
		return Head{}, false, fmt.Errorf("list log: %w", err)
	}
	if len(seqs) == 0 {
		// The marker tells the format of a bucket with no entry.
		format := LogFormat
		if data, _, err := readBounded(ctx, b, HistoryKey(genesisSeq), backend.GetOptions{}, MaxManifestBytes); err == nil && isRoot(data) {
			format = entryFormat(data)
		}
		if isDeltaLog(format) {
			// No entry yet, or every one collected below a checkpoint.
			return resolveDelta(ctx, b, at, genesisSeq, sent, now)
		}
		_, h := genesisOf(format)
		h.Version = logVersion(genesisSeq, sent)
		return h, true, nil
	}
	newest := seqs[len(seqs)-1]
	h, ok, err := readLogEntry(ctx, b, newest, time.Time{})
	if errors.Is(err, errNoBase) {
		return resolveDelta(ctx, b, at, newest, sent, now)
	}
	if err != nil {
		return Head{}, false, err
	}
	if !ok {
		return Head{}, false, corrupt(LogKey(newest), "listed as the newest log entry but gone")
	}
	// Entries may have been committed after the listing: read on. h was
	// read after the listing, so the walk's Stat settles it.
	h, _, err = walkLog(ctx, b, h, now)
	return h, true, err
}

// readHint reads manifest.json as it is, without resolving a log. In a
// DeltaFormat bucket it is a checkpoint root, read with its pages.
func readHint(ctx context.Context, b backend.Backend) (Head, error) {
	data, info, err := readBounded(ctx, b, ManifestKey, backend.GetOptions{}, MaxManifestBytes)
	if err != nil {
		return Head{}, err
	}
	return decodeHint(ctx, b, data, info)
}

// decodeHint is readHint's decoding of the hint's bytes.
func decodeHint(ctx context.Context, b backend.Backend, data []byte, info backend.ObjectInfo) (Head, error) {
	if isRoot(data) {
		r, err := decodeRoot(ManifestKey, data)
		if err != nil {
			return Head{}, err
		}
		return loadRoot(ctx, b, ManifestKey, r, info)
	}
	m, err := DecodeManifest(ManifestKey, data)
	if err != nil {
		return Head{}, err
	}
	v := info.Version
	if m.Format >= LogFormat {
		v = logVersion(m.Seq, time.Time{})
	}
	return Head{Manifest: m, Data: data, Version: v, Info: info}, nil
}

// ReadHeadSince is the conditional read of a LogFormat head: known is the
// head this reader holds (with its bytes and version). Unchanged, it
// returns known with its observation renewed and an error matching
// backend.ErrNotModified: one request while the observation is younger
// than LogTrust, two after.
func ReadHeadSince(ctx context.Context, b backend.Backend, known Head, now func() time.Time) (Head, error) {
	if now == nil {
		now = time.Now
	}
	if !known.IsLog() {
		return Head{}, fmt.Errorf("read head: %w", backend.ErrNotSupported)
	}
	h, moved, err := walkLog(ctx, b, known, now)
	if err != nil {
		return Head{}, err
	}
	if !moved {
		return h, backend.ErrNotModified
	}
	return h, nil
}

// isLogMarker reports whether the history lists the marker a LogFormat
// bucket is created with (HistoryKey(0), which no version-3 commit
// writes): a bucket whose hint is gone still reads as a log, and an older
// silt refuses it rather than take it for a fresh bucket.
func isLogMarker(ctx context.Context, b backend.Backend) (bool, error) {
	_, err := b.Stat(ctx, HistoryKey(genesisSeq))
	if backend.IsNotExist(err) {
		return false, nil
	}
	return err == nil, err
}

// createLog makes b a bucket of the format this silt writes: the marker,
// then the genesis hint by create-if-absent, which is what decides the
// bucket's format against an older silt creating a format-3 manifest at
// the same time. A lost race is backend.ErrPrecondition.
func createLog(ctx context.Context, b backend.Backend, now func() time.Time) (Head, error) {
	g, gh := genesisOf(DefaultFormat)
	// Every marker is the same bytes: Retry may resend or settle it.
	if _, err := backend.PutBytes(ctx, b, HistoryKey(genesisSeq), g, backend.Cond{IfAbsent: true, ContentNamed: true}); err != nil && !backend.IsPrecondition(err) {
		return Head{}, fmt.Errorf("create log: %w", err)
	}
	sent := now()
	info, err := backend.PutBytes(ctx, b, ManifestKey, g, backend.Cond{IfAbsent: true})
	if err != nil {
		if backend.IsPrecondition(err) {
			return Head{}, err
		}
		// Unknown outcome: the genesis there means it landed (every
		// writer's genesis is the same bytes). Anything else, or nothing,
		// is read again and retried like a lost race.
		data, hinfo, rerr := readBounded(ctx, b, ManifestKey, backend.GetOptions{}, MaxManifestBytes)
		if rerr != nil && !backend.IsNotExist(rerr) && !errors.Is(rerr, ErrCorruptIndex) {
			return Head{}, fmt.Errorf("create log: %w", err)
		}
		if rerr != nil || string(data) != string(g) {
			return Head{}, fmt.Errorf("create log: %w (%w)", backend.ErrPrecondition, err)
		}
		info = hinfo
	}
	gh.Version, gh.Info = logVersion(genesisSeq, sent), info
	return gh, nil
}

// errLogStale asks Commit to re-read a base whose observation is too old
// to create its successor on: gc may have deleted that successor, and
// creating it again would fork the log.
var errLogStale = errors.New("log base observed too long ago")

// commitLog writes next as the successor of base by create-if-absent.
// The result is landed, lost (another writer took the seq), or unknown.
// announce, when set, is given the head the entry makes before it is
// created (Proposal.Announce).
func commitLog(ctx context.Context, b backend.Backend, base Head, next *Manifest, now func() time.Time, every int, announce func(Head)) (Head, error) {
	if every <= 0 {
		every = DefaultCheckpointEvery
	}
	if !base.fresh(now()) {
		return Head{}, errLogStale
	}
	n, state, d, c := logEntry(base, next, every)
	data := encodeDelta(d)
	key := LogKey(n.Seq)
	sent := now()
	if announce != nil {
		announce(Head{Manifest: n, Data: state, Version: logVersion(n.Seq, sent), carry: c})
	}
	info, err := backend.PutBytes(ctx, b, key, data, backend.Cond{IfAbsent: true})
	if err != nil && !backend.IsPrecondition(err) && ctx.Err() == nil {
		// Unknown outcome: read back. Our bytes mean it landed.
		got, ginfo, ok, rerr := readLogRaw(ctx, b, n.Seq)
		switch {
		case rerr == nil && ok && string(got) == string(data):
			info, err = ginfo, nil
		case rerr == nil && ok:
			err = fmt.Errorf("write log entry %d: %w", n.Seq, backend.ErrPrecondition)
		}
	}
	if err != nil {
		return Head{}, err
	}
	h := Head{Manifest: n, Data: state, Version: logVersion(n.Seq, sent), Info: info, carry: c}
	if d.Checkpoint {
		checkpointAfter(ctx, b, h, sent, now)
	}
	return h, nil
}

// logState returns the state that committing next on the log head base
// makes, and its bytes: next in the format this silt writes, prev the hash of base's
// state (none on the genesis), the shards never nil and no empty fences
// (so a delta's reader, which rebuilds the state, encodes it alike).
func logState(base Head, next *Manifest) (*Manifest, []byte) {
	n := *next
	n.Format = DefaultFormat
	n.Prev = ""
	if base.Manifest.Seq != genesisSeq {
		n.Prev = base.stateHash()
	}
	if n.Shards == nil {
		n.Shards = []ShardRef{}
	}
	if len(n.Fences) == 0 {
		n.Fences = nil
	}
	return &n, EncodeManifest(&n)
}

// logEntry returns logState's state and bytes, the entry that commits
// it (the delta from base, cumulative when base carries what it needs)
// and the carry of the head it makes; every is the checkpoint cadence.
func logEntry(base Head, next *Manifest, every int) (*Manifest, []byte, *logDelta, *carry) {
	n, state := logState(base, next)
	d, c := diffState(base, n, state, every)
	return n, state, d, c
}

// ReadHead is ReadManifest without a condition, on the clock now (nil:
// time.Now), which stamps a log head's observation.
func ReadHead(ctx context.Context, b backend.Backend, now func() time.Time) (Head, error) {
	if now == nil {
		now = time.Now
	}
	return readHead(ctx, b, backend.GetOptions{}, now)
}
