package crypt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// Name returns the keyed content address of plain: the lowercase hex of
// HMAC-SHA256 under a key derived from the ring's name key. Every cache
// holding the ring names the same bytes the same (dedup works across
// them), while the bucket learns nothing of sha256(plain): a reader who
// guesses a file's content cannot confirm the guess by its name.
func (k *Keyring) Name(plain []byte) string {
	h := k.NameHash()
	h.Write(plain)
	return hex.EncodeToString(h.Sum(nil))
}

// NameHash returns a hash whose hex Sum is Name of what was written to
// it, for content too large to hold at once.
func (k *Keyring) NameHash() hash.Hash { return hmac.New(sha256.New, k.s.namesKey[:]) }

// sivLen is the synthetic IV's length: XChaCha20-Poly1305's nonce.
const sivLen = chacha20poly1305.NonceSizeX

// pathIV is the synthetic IV of path: a keyed hash of it, so the IV is
// unique to the path and the same every time.
func (k *Keyring) pathIV(path string) []byte {
	m := hmac.New(sha256.New, k.s.pathIVKey[:])
	m.Write([]byte(path))
	return m.Sum(nil)[:sivLen]
}

// SealName encrypts a path name deterministically: the same path seals to
// the same text in every cache holding the ring, so sealed paths can be
// sorted, compared and looked up without opening them. By design this
// reveals which sealed names are equal, never what they are; their
// length shows the path's length (Overhead bytes more, in base64).
//
// The construction is a synthetic IV (AES-SIV's idea, which the standard
// library lacks): the IV is HMAC-SHA256 of the path under one derived
// key, cut to 24 bytes, and the path is sealed with XChaCha20-Poly1305
// under another with that IV as nonce. The output, base64url without
// padding of IV and ciphertext, holds no '/' and is safe in a path or a
// URL.
func (k *Keyring) SealName(path string) string {
	iv := k.pathIV(path)
	out := append(make([]byte, 0, len(path)+Overhead), iv...)
	out = k.s.pathAEAD.Seal(out, iv, []byte(path), nil)
	return base64.RawURLEncoding.EncodeToString(out)
}

// OpenName returns the path SealName sealed. Any change to sealed (or a
// name sealed by another ring) fails with ErrAuth, and so does a text
// that opens but is not what SealName would write for its path, so each
// path has exactly one sealed name.
func (k *Keyring) OpenName(sealed string) (string, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(sealed)
	if err != nil {
		return "", fmt.Errorf("%w: sealed name is not base64url", ErrAuth)
	}
	if len(raw) < Overhead {
		return "", fmt.Errorf("%w: sealed name of %d bytes, shorter than %d", ErrAuth, len(raw), Overhead)
	}
	iv, ct := raw[:sivLen], raw[sivLen:]
	plain, err := k.s.pathAEAD.Open(nil, iv, ct, nil)
	if err != nil {
		return "", fmt.Errorf("%w: sealed name", ErrAuth)
	}
	path := string(plain)
	if !hmac.Equal(iv, k.pathIV(path)) {
		return "", fmt.Errorf("%w: sealed name is not the canonical sealing of its path", ErrAuth)
	}
	return path, nil
}
