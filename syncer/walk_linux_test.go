package syncer

import (
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

// A directory record's d_type and a stat's S_IFMT bits map to one file
// type through typeMode: the DTTOIF shift holds for every type.
func TestTypeMode_DirentAndStatAgree(t *testing.T) {
	for _, tc := range []struct {
		dt   byte
		ifmt uint32
		want fs.FileMode
	}{
		{unix.DT_REG, unix.S_IFREG, 0},
		{unix.DT_DIR, unix.S_IFDIR, fs.ModeDir},
		{unix.DT_LNK, unix.S_IFLNK, fs.ModeSymlink},
		{unix.DT_FIFO, unix.S_IFIFO, fs.ModeNamedPipe},
		{unix.DT_SOCK, unix.S_IFSOCK, fs.ModeSocket},
		{unix.DT_CHR, unix.S_IFCHR, fs.ModeDevice | fs.ModeCharDevice},
		{unix.DT_BLK, unix.S_IFBLK, fs.ModeDevice},
	} {
		if got := direntIFMT(tc.dt); got != tc.ifmt {
			t.Errorf("direntIFMT(%d) = %#o, want %#o", tc.dt, got, tc.ifmt)
		}
		if got := typeMode(tc.ifmt); got != tc.want {
			t.Errorf("typeMode(%#o) = %v, want %v", tc.ifmt, got, tc.want)
		}
	}
	if got := direntIFMT(unix.DT_UNKNOWN); got != 0 {
		t.Errorf("direntIFMT(DT_UNKNOWN) = %#o, want 0", got)
	}
	if got := typeMode(0o170000); got != fs.ModeIrregular {
		t.Errorf("typeMode(unknown) = %v, want ModeIrregular", got)
	}
}
