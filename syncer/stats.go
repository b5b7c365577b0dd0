package syncer

import (
	"context"
	"io/fs"
	"sync"
	"time"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/wrap"
	"github.com/siltsync/silt/internal/ignore"
)

// Stats reports what one operation did. It marshals to the stable JSON the
// command line prints (see FORMAT.md, "Operation statistics").
type Stats struct {
	Op       string       `json:"op"`
	Seq      uint64       `json:"seq"` // manifest sequence seen (or written)
	Files    FileStats    `json:"files"`
	Bytes    ByteStats    `json:"bytes"`
	Requests RequestStats `json:"requests"`
	Local    LocalStats   `json:"local"`
	Phases   []Phase      `json:"phases"`
	Ms       float64      `json:"ms"`
	// Conflicts lists the paths counted in Files.Conflicts, each kept as
	// the local copy has it.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Changes lists each file's outcome in completion order, up to
	// Config.MaxChanges; ChangesOmitted counts those past it.
	Changes        []Change `json:"changes,omitempty"`
	ChangesOmitted int      `json:"changes_omitted,omitempty"`
	// Skipped lists the first MaxSkipped of the entries counted in
	// Files.Skipped, with their kind.
	Skipped []Skip `json:"skipped,omitempty"`
	// Commit describes the commit that carried a push's changes; nil when
	// the operation committed nothing.
	Commit *CommitStats `json:"commit,omitempty"`
	// Reanchor is set when a pull with PullOptions.Reanchor moved this
	// cache's highest seen manifest.
	Reanchor *Reanchor `json:"reanchor,omitempty"`
	// Counts is the exact request accounting, conditional puts apart.
	Counts RequestCounts `json:"-"`
}

// RequestCounts is the exact accounting of the requests one operation
// sent: conditional puts apart from plain ones, and the body bytes on the
// wire (which include index objects, unlike Bytes).
type RequestCounts struct {
	Get       int64 `json:"get"` // requests sent, by verb
	Put       int64 `json:"put"`
	CondPut   int64 `json:"condPut"`
	Delete    int64 `json:"delete"`
	List      int64 `json:"list"`
	Stat      int64 `json:"stat"`
	BytesDown int64 `json:"bytesDown"` // body bytes read by Get
	BytesUp   int64 `json:"bytesUp"`   // body bytes sent by Put
}

// Total is the number of requests of every verb.
func (c RequestCounts) Total() int64 {
	return c.Get + c.Put + c.CondPut + c.Delete + c.List + c.Stat
}

// FileStats counts files by outcome.
type FileStats struct {
	Downloaded int `json:"downloaded"`
	Uploaded   int `json:"uploaded"`
	// Deduplicated counts files pushed whose bytes the store already held
	// (or that another file of the same push uploaded): nothing was sent.
	Deduplicated int `json:"deduplicated"`
	Deleted      int `json:"deleted"` // remote deletions
	Removed      int `json:"removed"` // local removals
	Unchanged    int `json:"unchanged"`
	Conflicts    int `json:"conflicts"`
	// Excluded counts the paths exclude rules kept out of the operation:
	// a push's walk counts an excluded directory once (it is not read),
	// a pull counts the committed files it left alone.
	Excluded int `json:"excluded"`
	// Skipped counts what a push's walk found and does not sync: symlinks,
	// devices, sockets, named pipes (listed in Stats.Skipped).
	Skipped int `json:"skipped"`
}

// ByteStats counts payload bytes moved.
type ByteStats struct {
	Down int64 `json:"down"`
	Up   int64 `json:"up"`
}

// RequestStats counts every request sent to the store; conditional puts
// count as put, each List page as one list.
type RequestStats struct {
	Get    int64 `json:"get"`
	Put    int64 `json:"put"`
	List   int64 `json:"list"`
	Delete int64 `json:"delete"`
	Stat   int64 `json:"stat"`
}

// Total is every request of the operation.
func (r RequestStats) Total() int64 { return r.Get + r.Put + r.List + r.Delete + r.Stat }

// LocalStats counts local work.
type LocalStats struct {
	Examined int `json:"examined"` // local files stat'ed
}

// Phase is the wall time of one phase of an operation.
type Phase struct {
	Name string  `json:"name"`
	Ms   float64 `json:"ms"`
}

// Conflict is a path where the local and remote copies both changed; silt
// kept the local copy and says why.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Copy names the local copy silt kept (under .silt/kept, relative to
	// the cache directory) when an edit landed while a pull replaced the
	// file; Resolve with KeepLocal, or Restore, puts it back.
	Copy string `json:"copy,omitempty"`
}

// MaxSkipped bounds Stats.Skipped and Status.Skipped; Files.Skipped
// counts them all.
const MaxSkipped = 100

// Skip is one entry a walk found and does not sync.
type Skip struct {
	Path string `json:"path"`
	// Kind is "symlink", "named pipe", "socket", "device" or "irregular".
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// op is the bookkeeping of one running operation: its own request counter
// over the namespace root, so concurrent callers never mix their counts.
type op struct {
	s     *Syncer
	b     *wrap.Counting
	start time.Time
	phase time.Time
	mu    sync.Mutex
	stats Stats

	// Remembered conflicts (resolve.go): paths that had one when the
	// operation began, those it synced since, and a pull's scope.
	pending map[string]bool
	settled []string
	scope   *scope
	dryRun  bool

	// Progress (Config.Progress) totals, guarded by mu.
	checked               int
	doneBytes, totalBytes int64
	held                  lockScope       // the scope lock the operation runs under
	narrow                func(lockScope) // narrows held (a push that walked everything), or nil
	ex                    *ignore.Matcher // the operation's exclude rules; nil: none
	tr                    opTrace         // Config.Tracer's spans (trace.go)
	obs                   Observer        // the caller's, from the context (observe.go)
	clock                 opClock         // the file system's time before the first hash (clock.go)
}

func (s *Syncer) begin(ctx context.Context, name string) *op {
	now := time.Now()
	o := &op{s: s, b: wrap.Count(s.root), start: now, phase: now, stats: Stats{Op: name}, obs: ObserverOf(ctx)}
	o.startTrace(ctx)
	// An operation that sends no request reports the last sequence this
	// cache saw; one that reads or writes the manifest overwrites it.
	_ = s.st.view(func(t stx) error { o.stats.Seq = t.metaUint(metaSeenSeq); o.loadPending(t); return nil })
	return o
}

// progress tells Config.Progress that one more of total files moved.
func (o *op) progress(p string, size int64, done *int, total int) {
	fn, own := o.s.cfg.Progress, o.obs.Progress
	if fn == nil && own == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	*done++
	o.doneBytes += size
	pr := Progress{Op: o.stats.Op, Phase: "transfer", Path: p, Bytes: size, Done: *done, Total: total,
		DoneBytes: o.doneBytes, TotalBytes: o.totalBytes, Checked: o.checked}
	if fn != nil {
		fn(pr)
	}
	if own != nil {
		own(pr)
	}
}

// planned sets the payload bytes the transfers of this operation move.
func (o *op) planned(bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.totalBytes = bytes
}

// examined counts one local file examined, and tells Config.Progress.
// path gives the file's path and is called only when someone listens: a
// push of a million unchanged files makes no string of their paths.
func (o *op) examined(path func() string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Local.Examined++
	o.checked++
	cfgFn, obsFn := o.s.cfg.Progress, o.obs.Progress
	tellCfg, tellObs := cfgFn != nil && o.s.cfg.ProgressChecks, obsFn != nil && o.obs.ProgressChecks
	if !tellCfg && !tellObs {
		return
	}
	pr := Progress{Op: o.stats.Op, Phase: "check", Path: path(), Checked: o.checked}
	if tellCfg {
		cfgFn(pr)
	}
	if tellObs {
		obsFn(pr)
	}
}

func (o *op) backend() backend.Backend { return o.b }

// mark closes the current phase under name.
func (o *op) mark(name string) {
	now := time.Now()
	o.stats.Phases = append(o.stats.Phases, Phase{Name: name, Ms: ms(now.Sub(o.phase))})
	o.tracePhase(name, o.phase, now)
	o.phase = now
}

func (o *op) conflict(p, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Files.Conflicts++
	o.stats.Conflicts = append(o.stats.Conflicts, Conflict{Path: p, Reason: reason})
	o.changeLocked(Change{Path: p, Action: ActionConflict, Reason: reason})
}

// skipped counts one entry the walk does not sync, and lists it.
func (o *op) skipped(p string, m fs.FileMode) {
	reason := notRegular(m)
	o.mu.Lock()
	o.stats.Files.Skipped++
	if len(o.stats.Skipped) < MaxSkipped {
		o.stats.Skipped = append(o.stats.Skipped, Skip{Path: p, Kind: skipKind(m), Reason: reason})
	}
	o.mu.Unlock()
	o.change(Change{Path: p, Action: ActionSkip, Reason: reason})
}

// skipKind names the type of an entry that is not a regular file.
func skipKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "irregular"
}

func (o *op) add(fn func(st *Stats)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fn(&o.stats)
}

func (o *op) finish() Stats {
	w := o.b.Counts()
	c := RequestCounts{Get: w.Get, Put: w.Put, CondPut: w.CondPut, Delete: w.Delete, List: w.List, Stat: w.Stat, BytesDown: w.BytesDown, BytesUp: w.BytesUp}
	o.stats.Counts = c
	o.stats.Requests = RequestStats{Get: c.Get, Put: c.Put + c.CondPut, List: c.List, Delete: c.Delete, Stat: c.Stat}
	o.stats.Ms = ms(time.Since(o.start))
	if o.stats.Phases == nil {
		o.stats.Phases = []Phase{}
	}
	o.endTrace(o.stats)
	return o.stats
}

// fail is finish for an operation that ends with err (recorded on its
// span when traced).
func (o *op) fail(err error) Stats {
	o.traceError(err)
	return o.finish()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
