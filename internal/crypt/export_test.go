package crypt

import (
	"encoding/base64"

	"golang.org/x/crypto/argon2"
)

// Secrets returns every key ring holds or derives, for tests that look
// for leaks.
func Secrets(ring *Keyring) [][]byte {
	s := ring.s
	out := [][]byte{s.nameKey[:], s.namesKey[:], s.pathIVKey[:]}
	pathKey := derive(s.nameKey[:], infoPath)
	out = append(out, pathKey[:])
	for _, info := range []string{infoIDs, infoContent, infoNonce, infoFingerprint} {
		d := derive(s.nameKey[:], info)
		out = append(out, d[:])
	}
	for _, g := range s.gens {
		dataKey := derive(g.secret[:], infoData)
		out = append(out, g.secret[:], dataKey[:])
	}
	return out
}

// WrapKey is the key k's keyring is wrapped under for passphrase.
func WrapKey(k *KeyFile, passphrase []byte) []byte {
	return argon2.IDKey(passphrase, k.Salt, k.Params.Time, k.Params.MemoryKiB, k.Params.Threads, KeySize)
}

// MarshalRing and UnmarshalRing are the keyring's own serialisation.
func MarshalRing(ring *Keyring) []byte { return ring.marshal() }

var UnmarshalRing = unmarshalRing

// SealNameWithIV seals path as SealName does, with iv for the synthetic
// IV: a sealing that opens but is not canonical.
func SealNameWithIV(ring *Keyring, path string, iv []byte) string {
	out := ring.s.pathAEAD.Seal(append([]byte(nil), iv...), iv, []byte(path), nil)
	return base64.RawURLEncoding.EncodeToString(out)
}
