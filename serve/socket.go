package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/siltsync/silt/syncer"
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

// SocketPath is the Unix socket of the service owning dir: DIR/.silt/serve.sock,
// or, when that path is too long for a socket, a name in the temporary
// directory derived from dir's absolute path. Server and clients compute it
// the same way, so nothing needs to be looked up.
func SocketPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	p := filepath.Join(abs, syncer.InternalDir, SocketName)
	if len(p) <= maxSocketPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "silt-"+hex.EncodeToString(sum[:8])+".sock"), nil
}

// Listen creates the Unix socket for dir, readable and writable by its
// owner only. A socket left behind by a service that died is replaced; one
// a live service answers on is refused with ErrServed. Closing the listener
// removes the socket.
func Listen(ctx context.Context, dir string) (net.Listener, error) {
	p, err := SocketPath(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(p); err == nil {
		if info, err := NewUnixClient(p).Info(ctx); err == nil {
			return nil, fmt.Errorf("%w (pid %d, socket %s)", ErrServed, info.PID, p)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("serve: remove stale socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", p)
	if err != nil {
		return nil, fmt.Errorf("serve: listen on %s: %w", p, err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Dial connects to the service owning dir, checking that it answers. With
// no service it fails with ErrNotServed (a socket nobody answers on counts
// as none).
func Dial(ctx context.Context, dir string) (*Client, error) {
	p, err := SocketPath(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotServed
	} else if err != nil {
		return nil, err
	}
	c := NewUnixClient(p)
	if _, err := c.Info(ctx); err != nil {
		var ne *net.OpError
		if errors.As(err, &ne) && ne.Op == "dial" {
			return nil, fmt.Errorf("%w (stale socket %s: %v)", ErrNotServed, p, err)
		}
		return nil, err
	}
	return c, nil
}
