//go:build unix && !linux

package serve

import (
	"net"
	"os"
	"syscall"
)

// peerUID is not told here; the socket file's owner (checked before
// dialing) and its 0600 mode in a private directory stand for it.
func peerUID(net.Conn) (int, bool, error) { return 0, false, nil }

// fileOwner is the user id owning a file.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
