//go:build !linux

package syncer

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
)

// dirFD is one open directory of a walk, shared by the jobs that open its
// subdirectories: the last to let go closes it. Outside Linux it is an
// os.Root on the directory, so opens and stats stay relative to it.
type dirFD struct {
	root *os.Root
	refs atomic.Int32
}

// direntBuf is unused outside Linux: os.File.ReadDir has its own buffer.
const direntBuf = 0

func openTop(l *local, start string) (*dirFD, error) {
	r, err := l.dir.OpenRoot(start)
	if err != nil {
		return nil, err
	}
	d := &dirFD{root: r}
	d.refs.Store(1)
	return d, nil
}

func (d *dirFD) hold() { d.refs.Add(1) }

func (d *dirFD) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

func (d *dirFD) openDir(name string) (*dirFD, error) {
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	nd := &dirFD{root: r}
	nd.refs.Store(1)
	return nd, nil
}

// list calls fn for every entry of d; a file opened in a Root reads each
// entry's stat relative to its directory.
func (d *dirFD) list(_ []byte, fn func(name []byte, e dirEnt)) error {
	f, err := d.root.Open(".")
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, de := range ents {
		name := []byte(de.Name())
		switch t := de.Type(); {
		case t.IsDir():
			fn(name, dirEnt{kind: entDir})
		case t.IsRegular():
			info, err := de.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // vanished while walking
			}
			if err != nil {
				return err
			}
			fn(name, dirEnt{kind: entFile, lf: infoFile(info)})
		default:
			fn(name, dirEnt{kind: entSkip, mode: t})
		}
	}
	return nil
}
