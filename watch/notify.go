package watch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/internal/ignore"
	"github.com/siltsync/silt/syncer"
)

// notifyBuffer is the events fsnotify may queue for the loop: a step that
// runs for seconds must not make the reader drop a burst.
const notifyBuffer = 4096

// notifier watches every directory under root. inotify (and kqueue) watch
// one directory each, so new directories are added as their create
// events arrive; a directory created and filled before its watch lands
// is pushed whole (the loop pushes the directory's path, and the push
// walks it).
type notifier struct {
	w    *fsnotify.Watcher
	root string

	mu   sync.Mutex
	m    *ignore.Matcher // nil: nothing excluded
	dirs map[string]bool // watched, cache-relative ("" is root)
}

// newNotifier starts watching root; an error means the file system
// gives no events here (or the watch limit was hit at once) and the
// caller relies on walks.
func newNotifier(root string, m *ignore.Matcher) (*notifier, error) {
	w, err := fsnotify.NewBufferedWatcher(notifyBuffer)
	if err != nil {
		return nil, err
	}
	n := &notifier{w: w, root: root, m: m, dirs: map[string]bool{}}
	if err := n.addTree(""); err != nil {
		w.Close()
		return nil, err
	}
	return n, nil
}

func (n *notifier) close() { n.w.Close() }

// count returns how many directories are watched.
func (n *notifier) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.dirs)
}

func (n *notifier) setRules(m *ignore.Matcher) {
	n.mu.Lock()
	n.m = m
	n.mu.Unlock()
}

// skip reports whether rel is never watched nor pushed: silt's internal
// directory (its temporaries and local state write all the time) and
// what the exclude rules keep out.
func (n *notifier) skip(rel string, dir bool) bool {
	if rel == index.InternalDir || strings.HasPrefix(rel, index.InternalDir+"/") {
		return true
	}
	n.mu.Lock()
	m := n.m
	n.mu.Unlock()
	v := m.Path(rel, dir)
	return v == ignore.Excluded && (!dir || !m.Descend(rel, v))
}

// addTree watches rel and every directory below it. A directory that
// vanished meanwhile is no error: its removal has its own event.
func (n *notifier) addTree(rel string) error {
	start := filepath.Join(n.root, filepath.FromSlash(rel))
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		r, ok := n.rel(p)
		if !ok || (r != "" && n.skip(r, true)) {
			return filepath.SkipDir
		}
		if err := n.w.Add(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		n.mu.Lock()
		n.dirs[r] = true
		n.mu.Unlock()
		return nil
	})
}

// rel is the cache-relative, slash-separated path of an absolute one
// under root; false when it is not under root.
func (n *notifier) rel(p string) (string, bool) {
	r, err := filepath.Rel(n.root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

// changed turns one fsnotify event into the path to push ("" and false
// when it names nothing to push), watching a new directory on the way.
// The error is one of adding that watch (the limit of watches, say).
func (n *notifier) changed(ev fsnotify.Event) (string, bool, error) {
	r, ok := n.rel(ev.Name)
	if !ok || r == "" {
		return "", false, nil
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		n.mu.Lock()
		delete(n.dirs, r) // the kernel dropped its watch, if it was one
		n.mu.Unlock()
		return r, !n.skip(r, false), nil
	}
	fi, err := os.Lstat(ev.Name)
	if err != nil {
		return r, !n.skip(r, false), nil // gone already: a deletion to push
	}
	if n.skip(r, fi.IsDir()) {
		return "", false, nil
	}
	if fi.IsDir() && ev.Has(fsnotify.Create) {
		return r, true, n.addTree(r)
	}
	return r, true, nil
}

// rules builds the matcher of the exclude rules a watch honours: the data
// root's ignore file, then the options' rules, as an operation's.
func rules(root string, exclude, include []string) (*ignore.Matcher, error) {
	m := &ignore.Matcher{}
	data, err := os.ReadFile(filepath.Join(root, syncer.IgnoreFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := m.ExcludeFile(syncer.IgnoreFile, data); err != nil {
		return nil, err
	}
	if err := m.Exclude("Options.Exclude", exclude...); err != nil {
		return nil, err
	}
	if err := m.Include("Options.Include", include...); err != nil {
		return nil, err
	}
	return m, nil
}
