package serve

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// MinTokenLen is the shortest bearer token a TCP listener accepts: 32
// characters, 128 bits as hex (`openssl rand -hex 16`).
const MinTokenLen = 32

// ErrWeakToken is returned for a bearer token that is too short, or read
// from a file others may read.
var ErrWeakToken = errors.New("serve: weak bearer token")

// CheckToken refuses a token under MinTokenLen characters.
func CheckToken(token string) error {
	if len(token) < MinTokenLen {
		return fmt.Errorf("%w: %d characters, want at least %d (128 bits: openssl rand -hex 16)", ErrWeakToken, len(token), MinTokenLen)
	}
	return nil
}

// ReadTokenFile reads a bearer token (trimmed) from a file only its owner
// may read (mode 0600 or 0400) and checks it with CheckToken.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrWeakToken, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%w: %s is readable by others (mode %04o); chmod 600 %s", ErrWeakToken, path, perm, path)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return "", fmt.Errorf("%w: %s belongs to uid %d", ErrWeakToken, path, uid)
	}
	data := make([]byte, 4096)
	n, err := f.Read(data)
	if err != nil && n == 0 {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	token := strings.TrimSpace(string(data[:n]))
	return token, CheckToken(token)
}
