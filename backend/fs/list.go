package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"syscall"

	"github.com/siltsync/silt/backend"
)

// List implements backend.Backend. It reads only the directory the
// prefix's last "/" points at and the directories below it, and visits
// entries in an order that yields keys in ascending byte order (see
// walk). Files whose paths are not valid keys, symbolic links to
// directories, and anything that is not a regular file are skipped. The
// walk reads each directory when it reaches it, so fn may write to the
// bucket; such writes may or may not show in later pages.
func (b *Backend) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func([]backend.ObjectInfo) error) error {
	dirKey, namePrefix := "", prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dirKey, namePrefix = prefix[:i+1], prefix[i+1:]
		if first, _, _ := strings.Cut(prefix, "/"); first == Reserved {
			return &backend.KeyError{Key: prefix, Reason: fmt.Sprintf("first segment %q is reserved by the file backend", Reserved)}
		}
	}
	l := &lister{b: b, ctx: ctx, fn: fn, size: opts.PageSize}
	if err := l.walk(dirKey, namePrefix); err != nil {
		return err
	}
	if len(l.page) > 0 {
		if err := l.flush(); err != nil {
			return err
		}
	}
	return ctx.Err()
}

type lister struct {
	b    *Backend
	ctx  context.Context
	fn   func([]backend.ObjectInfo) error
	size int
	page []backend.ObjectInfo
}

type entry struct {
	name  string
	order string // name for a file, name+"/" for a directory
	dir   bool
}

// walk lists the objects in directory dirKey (a key prefix ending in "/",
// or "" for the root) whose names begin with namePrefix. Every key under a
// subdirectory d begins with d+"/", and no sibling's name is d, so sorting
// siblings by name (files) or name+"/" (directories) and descending in
// that order yields all keys in byte order. Sorting by name alone would
// not: "a-b" < "a/c" as keys, but "a" < "a-b" as names.
func (l *lister) walk(dirKey, namePrefix string) error {
	des, err := os.ReadDir(l.b.path(dirKey))
	if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // nothing under this prefix
	}
	if err != nil {
		return classify("list", dirKey+namePrefix, err)
	}
	entries := make([]entry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, namePrefix) || (dirKey == "" && name == Reserved) {
			continue
		}
		mode := de.Type()
		if mode&iofs.ModeSymlink != 0 {
			fi, err := os.Stat(filepath.Join(l.b.path(dirKey), name))
			if err != nil || fi.IsDir() {
				continue // dangling, or a directory link that could loop
			}
			mode = fi.Mode().Type()
		}
		switch {
		case mode.IsDir():
			entries = append(entries, entry{name, name + "/", true})
		case mode.IsRegular():
			entries = append(entries, entry{name, name, false})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.order, b.order) })
	for _, e := range entries {
		key := dirKey + e.name
		if e.dir {
			if err := l.walk(key+"/", ""); err != nil {
				return err
			}
			continue
		}
		if err := l.add(key); err != nil {
			return err
		}
	}
	return nil
}

// add appends key's info to the page, and hands the page over when full.
// A file removed since its directory was read is skipped.
func (l *lister) add(key string) error {
	if backend.ValidateKey(key) != nil {
		return nil // a name the key rules cannot express, made by hand
	}
	f, s, err := l.b.openObject(l.ctx, "list", key)
	if backend.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	f.Close()
	l.page = append(l.page, info(key, s))
	if len(l.page) < l.size {
		return nil
	}
	return l.flush()
}

func (l *lister) flush() error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	page := l.page
	l.page = nil // fn may keep the page it was given
	return l.fn(page)
}
