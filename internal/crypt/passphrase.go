package crypt

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// PassphraseEnv is the variable PassphraseFromEnv reads (restic's
// convention, RESTIC_PASSWORD, under silt's name).
const PassphraseEnv = "SILT_PASSWORD"

// PassphraseFromEnv returns the passphrase in SILT_PASSWORD, and whether
// there is one. Set but empty counts as unset, as with restic, so that
// `SILT_PASSWORD= silt ...` turns it off.
func PassphraseFromEnv() ([]byte, bool) {
	v := os.Getenv(PassphraseEnv)
	if v == "" {
		return nil, false
	}
	return []byte(v), true
}

// maxPassphraseFile bounds what ReadPassphraseFile reads, so a path to a
// device or a large file by mistake fails rather than filling memory.
const maxPassphraseFile = 64 << 10

// ReadPassphraseFile returns the passphrase in the file at path, less one
// trailing newline ("\n" or "\r\n") as editors and `echo` leave; other
// spaces are part of it. An empty passphrase is ErrEmptyPassphrase.
// Errors name the path, never the content.
func ReadPassphraseFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crypt: passphrase file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPassphraseFile+1))
	if err != nil {
		return nil, fmt.Errorf("crypt: passphrase file: %w", err)
	}
	if len(b) > maxPassphraseFile {
		return nil, fmt.Errorf("crypt: passphrase file %s: longer than %d bytes", path, maxPassphraseFile)
	}
	if t, ok := bytes.CutSuffix(b, []byte("\r\n")); ok {
		b = t
	} else {
		b = bytes.TrimSuffix(b, []byte("\n"))
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("crypt: passphrase file %s: %w", path, ErrEmptyPassphrase)
	}
	return b, nil
}
