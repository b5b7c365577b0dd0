package syncer

import (
	"io/fs"
	"os"
	"sync"

	"github.com/siltsync/silt/index"
)

// clockFile is written to read the cache file system's own clock.
const clockFile = index.InternalDir + "/clock"

// A clockStamp is the time of the cache's file system, read as the mtime a
// write gives a file, taken before any file of an operation is read. It
// answers racily clean files as git does, with the file system's clock
// instead of the machine's: a file whose mtime, after it was read, is
// earlier than the stamp was last written before the read began, and any
// write since gives it an mtime at or after the stamp, so a stat sees it.
// Such a file needs no racy window: its record is trusted by stat at once,
// and the next operation does not hash it again. A file written in the
// stamp's own tick (or in the future) is judged by the window as before.
type clockStamp struct {
	ns  int64
	dev uint64
	ok  bool
}

// stampClock writes the clock file and returns its mtime. A failure (a
// read-only cache, a platform without device numbers) gives a stamp that
// proves nothing: records then wait out the racy window.
func (l *local) stampClock() clockStamp {
	f, err := l.dir.OpenFile(clockFile, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return clockStamp{}
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{'t'}, 0); err != nil {
		return clockStamp{}
	}
	fi, err := f.Stat()
	if err != nil {
		return clockStamp{}
	}
	dev, ok := fileDev(fi)
	return clockStamp{ns: fi.ModTime().UnixNano(), dev: dev, ok: ok}
}

// proves reports whether the stamp shows that fi, a stat taken after its
// file was read, saw the last write before the read: same file system
// (one clock), and an mtime strictly earlier than the stamp.
func (c clockStamp) proves(fi fs.FileInfo) bool {
	if !c.ok {
		return false
	}
	dev, ok := fileDev(fi)
	return ok && dev == c.dev && fi.ModTime().UnixNano() < c.ns
}

// verifiedNs is the VerifiedNs to record for content checked now with the
// stat lf. A check the clock proved is recorded as at least a racy window
// after the mtime, which is what fileRecord.unchanged asks; so a state
// read by an earlier silt means the same.
func verifiedNs(lf localFile, proved bool) int64 {
	t := now()
	if proved {
		t = max(t, lf.mtimeNs+racyWindow)
	}
	return t
}

// opClock is an operation's stamp, taken once, before the first file it
// hashes is opened: every read of the operation starts after it.
type opClock struct {
	once  sync.Once
	stamp clockStamp
}

func (c *opClock) get(l *local) clockStamp {
	c.once.Do(func() { c.stamp = l.stampClock() })
	return c.stamp
}
