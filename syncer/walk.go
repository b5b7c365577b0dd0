package syncer

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/ignore"
)

// The walk of a push reads the cache's directories in parallel (each
// directory is opened relative to its parent's descriptor, never by a path
// from the top, and every regular file is stat'ed relative to its
// directory), keeps what it found as a tree of directories, and then hands
// the files out in byte order of their paths, the order of the index and
// of the local state: a push merges the two without a lookup per file.

// dirNode is one directory the walk read. Its entries are sorted by key:
// a file's name, or a directory's name followed by "/", so that a
// depth-first visit yields paths in byte order ("a-b" < "a/c" because
// '-' < '/').
type dirNode struct {
	names []byte // entry keys, back to back
	ents  []dirEnt
}

// entKind is what one directory entry is.
type entKind uint8

const (
	entFile entKind = iota // a regular file: lf holds its stat
	entDir                 // a directory: sub holds what it contains
	entSkip                // neither: mode holds its type
)

// dirEnt is one entry of a dirNode.
type dirEnt struct {
	off  uint32 // key at names[off : off+n]
	n    uint16
	kind entKind
	mode fs.FileMode
	lf   localFile
	sub  *dirNode
}

// add appends an entry whose key is name (plus "/" for a directory).
func (n *dirNode) add(name []byte, e dirEnt) {
	e.off, e.n = uint32(len(n.names)), uint16(len(name))
	n.names = append(n.names, name...)
	if e.kind == entDir {
		n.names = append(n.names, '/')
		e.n++
	}
	n.ents = append(n.ents, e)
}

func (n *dirNode) key(e *dirEnt) []byte { return n.names[e.off : e.off+uint32(e.n)] }

func (n *dirNode) sort() {
	slices.SortFunc(n.ents, func(a, b dirEnt) int { return bytes.Compare(n.key(&a), n.key(&b)) })
}

// each calls fn for every file and skipped entry at or below n, in path
// order, with the entry's path: buf (n's own path, "" or ending in "/")
// followed by its name. The path is only valid during the call.
func (n *dirNode) each(buf []byte, fn func(p []byte, e *dirEnt) error) error {
	base := len(buf)
	for i := range n.ents {
		e := &n.ents[i]
		buf = append(buf[:base], n.key(e)...)
		if e.kind == entDir {
			if err := e.sub.each(buf, fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(buf, e); err != nil {
			return err
		}
	}
	return nil
}

// walkJob is one directory to read: name, opened relative to parent.
type walkJob struct {
	node   *dirNode
	parent *dirFD
	name   string
	path   string // the directory's path inside the cache directory, for errors
	data   string // its data path ("" for the top of the data paths)
	v      ignore.Verdict
}

// walker runs walkJobs on a bounded set of goroutines. Jobs are taken
// last in, first out, so the walk goes depth first and few directories
// are open at a time: a directory stays open only until its last
// subdirectory has been opened.
type walker struct {
	ctx     context.Context
	mu      sync.Mutex
	cond    sync.Cond
	stack   []walkJob
	pending int // pushed and not yet done
	err     error
	ex      *ignore.Matcher // nil: nothing is excluded
	// excluded counts the entries ex left out (a directory once: what is
	// below it is not read).
	excluded atomic.Int64
}

// walkWorkers bounds the goroutines of one walk: reading a directory and
// stat'ing its files is all system calls, so a few more than the
// processors keep them busy.
func walkWorkers() int { return min(max(2*runtime.GOMAXPROCS(0), 4), 16) }

// readTree reads the directory at start (a path inside l.dir, "." for its
// top; data is its data path, judged v by ex) and everything below it,
// except directories named index.InternalDir and what ex excludes. It returns
// how many entries ex left out. The tree's paths are data paths: prefix
// is start's own ("" or "a/b/").
func (l *local) readTree(ctx context.Context, start, data string, ex *ignore.Matcher, v ignore.Verdict) (*dirNode, int, error) {
	top, err := openTop(l, start)
	if err != nil {
		return nil, 0, err
	}
	root := &dirNode{}
	w := &walker{ctx: ctx, ex: ex}
	w.cond.L = &w.mu
	w.pending = 1
	w.stack = append(w.stack, walkJob{node: root, parent: top, name: ".", path: start, data: data, v: v})
	var wg sync.WaitGroup
	for range walkWorkers() {
		wg.Go(func() {
			buf := make([]byte, direntBuf)
			for {
				j, ok := w.next()
				if !ok {
					return
				}
				w.done(w.read(j, buf))
			}
		})
	}
	wg.Wait()
	for _, j := range w.stack { // left by an error
		j.parent.release()
	}
	if w.err != nil {
		return nil, 0, w.err
	}
	return root, int(w.excluded.Load()), nil
}

// next returns the next job, or false when the walk is over (every job
// done, or one failed).
func (w *walker) next() (walkJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.stack) == 0 && w.pending > 0 && w.err == nil {
		w.cond.Wait()
	}
	if w.err != nil || len(w.stack) == 0 {
		return walkJob{}, false
	}
	j := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	return j, true
}

// push queues the subdirectory name of parent (which it holds a
// reference of for the job).
func (w *walker) push(j walkJob) {
	j.parent.hold()
	w.mu.Lock()
	w.pending++
	w.stack = append(w.stack, j)
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *walker) done(err error) {
	w.mu.Lock()
	w.pending--
	if err != nil && w.err == nil {
		w.err = err
	}
	end := w.pending == 0 || w.err != nil
	w.mu.Unlock()
	if end {
		w.cond.Broadcast()
	}
}

// read reads one directory into j.node, queueing its subdirectories.
func (w *walker) read(j walkJob, buf []byte) error {
	if err := w.ctx.Err(); err != nil {
		j.parent.release()
		return err
	}
	d, err := j.parent.openDir(j.name)
	j.parent.release()
	if errors.Is(err, fs.ErrNotExist) {
		return nil // vanished while walking
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: j.path, Err: err}
	}
	defer d.release()
	err = d.list(buf, func(name []byte, e dirEnt) {
		if e.kind == entDir && string(name) == index.InternalDir {
			return // this cache's own state, or a cache nested in it
		}
		var sub string
		v := ignore.Keep
		if w.ex != nil {
			sub = childPath(j.data, name)
			v = w.ex.Judge(j.v, sub, e.kind == entDir)
			if e.kind != entDir && v == ignore.Excluded || e.kind == entDir && !w.ex.Descend(sub, v) {
				w.excluded.Add(1)
				return
			}
		}
		if e.kind == entDir {
			e.sub = &dirNode{}
			w.push(walkJob{node: e.sub, parent: d, name: string(name), path: j.path + "/" + string(name), data: sub, v: v})
		}
		j.node.add(name, e)
	})
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: j.path, Err: err}
	}
	j.node.sort()
	return nil
}

// childPath is the data path of name in the directory dir ("" = top).
func childPath(dir string, name []byte) string {
	if dir == "" {
		return string(name)
	}
	return dir + "/" + string(name)
}

// walkPrefix is the data path prefix of the files below start: "" for
// the top of the data paths, else start's data path and "/".
func walkPrefix(p string) string {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return ""
	}
	return p + "/"
}
