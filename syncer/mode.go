package syncer

import "runtime"

// What metadata syncs: a file's bytes and its owner's execute bit (as git
// keeps it), nothing else: not mtimes, owners, groups or other mode bits.
// A pull installs a file 0755 when its entry is executable and 0644
// otherwise, before the umask.

// execBitSyncs is false where the file system has no execute bit to
// read (Windows reports none): there a cache keeps the bit it synced and
// never pushes a change of it.
const execBitSyncs = runtime.GOOS != "windows"

// exec is the executable bit u commits: the local one, or where no bit
// can be read, the one this cache synced.
func (u upload) exec() bool {
	if !execBitSyncs {
		return u.hasRec && u.rec.Exec
	}
	return u.local.exec
}

// execDiffers reports whether the local file's bit is not x.
func (lf localFile) execDiffers(x bool) bool { return execBitSyncs && lf.exec != x }

// installMode is the permission a pull creates the file of an entry
// with, before the umask.
func installMode(exec bool) uint32 {
	if exec {
		return 0o755
	}
	return 0o644
}

// modeReason describes a change of the executable bit alone.
func modeReason(exec bool) string {
	if exec {
		return "executable bit set; content unchanged"
	}
	return "executable bit cleared; content unchanged"
}
