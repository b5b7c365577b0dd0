package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/siltsync/silt/index"
)

// SocketName is the socket's file name inside DIR/.silt.
const SocketName = "serve.sock"

// maxSocketPath is the longest Unix socket path every platform accepts
// (sun_path is 104 bytes on the BSDs, 108 on Linux, with a NUL).
const maxSocketPath = 103

// ErrServed is returned by Listen when a running service already owns
// the directory.
var ErrServed = errors.New("serve: the directory is already served by another silt serve")

// ErrNotServed is returned by Dial when no service owns the directory.
var ErrNotServed = errors.New("serve: no service owns the directory")

// ErrForeignSocket is returned when the socket, or the directory holding
// it, belongs to another user or is open to others: a client never talks
// to it, and a service never listens there.
var ErrForeignSocket = errors.New("serve: socket not owned by this user")

// SocketPath is the Unix socket of the service owning dir: DIR/.silt/serve.sock,
// or, when that path is too long for a socket, a name derived from dir's
// absolute path in this user's private runtime directory (see
// RuntimeDir). Server and clients compute it the same way, so nothing
// needs to be looked up.
func SocketPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	p := filepath.Join(abs, index.InternalDir, SocketName)
	if len(p) <= maxSocketPath {
		return p, nil
	}
	rd, err := RuntimeDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	p = filepath.Join(rd, hex.EncodeToString(sum[:8])+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("serve: socket path %s is over %d bytes; set XDG_RUNTIME_DIR or TMPDIR to a shorter directory", p, maxSocketPath)
	}
	return p, nil
}

// RuntimeDir is where sockets of long cache paths go: $XDG_RUNTIME_DIR/silt
// when XDG_RUNTIME_DIR is set, else $TMPDIR/silt-UID. Never a shared name
// in a shared directory: the directory must be this user's and closed to
// others (0700), or it is ErrForeignSocket. It is not created here.
func RuntimeDir() (string, error) {
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		if err := checkPrivateDir(x, false); err != nil {
			return "", err
		}
		return filepath.Join(x, "silt"), nil
	}
	return filepath.Join(os.TempDir(), "silt-"+strconv.Itoa(os.Getuid())), nil
}

// checkPrivateDir refuses a directory (not a symlink) that another user
// owns or, with private, that others may enter. An absent one passes.
func checkPrivateDir(p string, private bool) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrForeignSocket, p)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%w: %s belongs to uid %d", ErrForeignSocket, p, uid)
	}
	if private && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s is open to others (mode %v; want 0700)", ErrForeignSocket, p, fi.Mode().Perm())
	}
	return nil
}

// Listen creates the Unix socket for dir, readable and writable by its
// owner only: it is bound in a fresh 0700 directory beside its final name,
// made 0600 there, then renamed into place, so no one else can connect in
// between. A socket left behind by a service that died is replaced; one a
// live service answers on is refused with ErrServed. Closing the listener
// removes the socket. Connections from another user are closed unanswered
// where the peer can be told (SO_PEERCRED on Linux).
func Listen(ctx context.Context, dir string) (net.Listener, error) {
	p, err := SocketPath(dir)
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(p)
	if rd, rerr := RuntimeDir(); rerr == nil && parent == rd {
		if err := os.Mkdir(rd, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if err := checkPrivateDir(rd, true); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	return listenPrivate(ctx, p)
}

// listenPrivate binds the socket p, refusing one a live service answers
// on: bound in a fresh 0700 directory beside p, made 0600 there, then
// renamed into place, so no one else can connect in between.
func listenPrivate(ctx context.Context, p string) (net.Listener, error) {
	if _, err := os.Lstat(p); err == nil {
		if info, err := NewUnixClient(p).Info(ctx); err == nil {
			return nil, fmt.Errorf("%w (%s, pid %d, socket %s)", ErrServed, info.Owner, info.PID, p)
		}
	}
	parent := filepath.Dir(p)
	tmp := filepath.Join(parent, ".s"+rand.Text()[:6])
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bind := filepath.Join(tmp, "s")
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", bind)
	if err != nil {
		return nil, fmt.Errorf("serve: listen on %s: %w", p, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(bind, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(bind, p); err != nil {
		ln.Close()
		return nil, fmt.Errorf("serve: place socket %s: %w", p, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &socketListener{UnixListener: ul, path: p, fi: fi}, nil
}

// socketListener removes its socket file on Close, if it is still the one
// it placed (a later service may have replaced a socket it took for stale).
type socketListener struct {
	*net.UnixListener
	path string
	fi   os.FileInfo
}

// Addr is the socket's final path, not the private directory it was
// bound in, so a client may dial what the listener reports.
func (l *socketListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.fi) {
		_ = os.Remove(l.path) // gone already is fine
	}
	return err
}

// Dial connects to the service owning dir, checking that it answers. With
// no service it fails with ErrNotServed (a socket nobody answers on counts
// as none); a socket another user owns, or answers on, is ErrForeignSocket.
func Dial(ctx context.Context, dir string) (*Client, error) {
	p, err := SocketPath(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotServed
	} else if err != nil {
		return nil, err
	}
	if err := checkSocketFile(p, fi); err != nil {
		return nil, err
	}
	c := NewUnixClient(p)
	info, err := c.Info(ctx)
	if err != nil {
		if errors.Is(err, ErrForeignSocket) {
			return nil, err
		}
		var ne *net.OpError
		if errors.As(err, &ne) && ne.Op == "dial" {
			return nil, fmt.Errorf("%w (stale socket %s: %v)", ErrNotServed, p, err)
		}
		return nil, err
	}
	c.info = info
	return c, nil
}

// checkSocketFile refuses a socket another user owns, or one in a
// directory another user owns.
func checkSocketFile(p string, fi os.FileInfo) error {
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket", ErrForeignSocket, p)
	}
	if uid, ok := fileOwner(fi); ok && uid != clientUID() {
		return fmt.Errorf("%w: %s belongs to uid %d", ErrForeignSocket, p, uid)
	}
	return checkPrivateDir(filepath.Dir(p), false)
}

// dialUnix connects to the socket at path and checks, where the OS tells,
// that this user's process answers.
func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkPeer refuses a connection whose other end runs as another user.
func checkPeer(c net.Conn) error {
	uid, ok, err := peerUID(c)
	if err != nil {
		return fmt.Errorf("serve: peer credentials: %w", err)
	}
	if ok && uid != clientUID() {
		return fmt.Errorf("%w: the peer runs as uid %d", ErrForeignSocket, uid)
	}
	return nil
}

// clientUID is the user a client expects to answer: this process's (a
// variable so tests can play another user).
var clientUID = os.Getuid

// peerChecked closes, unanswered, connections from another user.
func peerChecked(ln net.Listener) net.Listener { return &peerListener{ln, os.Getuid()} }

type peerListener struct {
	net.Listener
	uid int // the only user answered
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uid, ok, err := peerUID(c); err == nil && (!ok || uid == l.uid) {
			return c, nil
		}
		c.Close()
	}
}
