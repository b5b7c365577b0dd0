package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"golang.org/x/crypto/chacha20"
)

// HKDF info strings of the name key's two further uses.
const (
	infoIDs     = "silt ids v1"
	infoContent = "silt content v1"
	infoNonce   = "silt content nonce v1"

	infoFingerprint = "silt fingerprint v1"
)

// contentState is derived from the name key once, on first use.
type contentState struct {
	ids        cipher.Block // AES-256: the permutation of hidden ids
	contentKey [KeySize]byte
	nonceKey   [KeySize]byte
}

func (k *Keyring) content() *contentState {
	s := k.s
	s.contentOnce.Do(func() {
		idKey := derive(s.nameKey[:], infoIDs)
		ids, err := aes.NewCipher(idKey[:])
		if err != nil {
			panic(err) // a 32-byte key
		}
		s.cs = &contentState{
			ids:        ids,
			contentKey: derive(s.nameKey[:], infoContent),
			nonceKey:   derive(s.nameKey[:], infoNonce),
		}
	})
	return s.cs
}

// HideID returns the keyed permutation of id, a content hash of 16 or 32
// bytes, as the bucket sees it: the same length, the same in every cache
// of the ring, and invertible by RevealID, so a listing of hidden ids
// gives back the ids. A reader without the ring learns nothing of id (it
// cannot confirm a guessed file by its sha256).
//
// 16 bytes are one AES-256 block. 32 bytes are two blocks chained forward
// and back (c1' = E(p1), c2 = E(p2 ^ c1'), c1 = E(c1' ^ c2)), so every
// byte of the output depends on every byte of the input.
func (k *Keyring) HideID(id []byte) ([]byte, error) {
	b := k.content().ids
	out := make([]byte, len(id))
	switch len(id) {
	case 16:
		b.Encrypt(out, id)
	case 32:
		var t [16]byte
		b.Encrypt(t[:], id[:16])
		xor16(out[16:], id[16:], t[:])
		b.Encrypt(out[16:], out[16:])
		xor16(out[:16], t[:], out[16:])
		b.Encrypt(out[:16], out[:16])
	default:
		return nil, fmt.Errorf("crypt: hide an id of %d bytes: want 16 or 32", len(id))
	}
	return out, nil
}

// RevealID inverts HideID.
func (k *Keyring) RevealID(hidden []byte) ([]byte, error) {
	b := k.content().ids
	out := make([]byte, len(hidden))
	switch len(hidden) {
	case 16:
		b.Decrypt(out, hidden)
	case 32:
		var t, c2 [16]byte
		b.Decrypt(t[:], hidden[:16])
		xor16(t[:], t[:], hidden[16:]) // c1'
		b.Decrypt(c2[:], hidden[16:])
		xor16(out[16:], c2[:], t[:])
		b.Decrypt(out[:16], t[:])
	default:
		return nil, fmt.Errorf("crypt: reveal an id of %d bytes: want 16 or 32", len(hidden))
	}
	return out, nil
}

func xor16(dst, a, b []byte) {
	for i := range 16 {
		dst[i] = a[i] ^ b[i]
	}
}

// MaxContentBytes is the most a Keystream covers: XChaCha20's 32-bit
// block counter of 64-byte blocks.
const MaxContentBytes = 64 << 32

// Keystream is the XChaCha20 keystream of one content-named object: its
// key is derived from the ring's name key and its nonce from the object's
// name, so the same name has the same keystream in every cache and at
// every offset, and a ranged read or a resent part of a multipart upload
// XORs the same bytes. That is safe because a content-named object's name
// is the hash of its bytes: one name never stands for two texts. Its
// integrity is the index's: the sealed index holds the hash of every such
// object's plain bytes, and every reader checks it.
type Keystream struct {
	key   [KeySize]byte
	nonce [chacha20.NonceSizeX]byte
	c     *chacha20.Cipher
	pos   int64
}

// Keystream returns the keystream of the content-named object name,
// positioned at offset 0.
func (k *Keyring) Keystream(name string) *Keystream {
	cs := k.content()
	m := hmac.New(sha256.New, cs.nonceKey[:])
	m.Write([]byte(name))
	s := &Keystream{key: cs.contentKey}
	copy(s.nonce[:], m.Sum(nil))
	s.SeekTo(0)
	return s
}

// SeekTo positions the keystream at offset off of the object.
func (s *Keystream) SeekTo(off int64) {
	if off < 0 || off > MaxContentBytes {
		panic(fmt.Sprintf("crypt: keystream offset %d outside [0, %d]", off, int64(MaxContentBytes)))
	}
	c, err := chacha20.NewUnauthenticatedCipher(s.key[:], s.nonce[:])
	if err != nil {
		panic(err) // a 32-byte key and a 24-byte nonce
	}
	c.SetCounter(uint32(off / 64))
	if skip := off % 64; skip > 0 {
		var pad [64]byte
		c.XORKeyStream(pad[:skip], pad[:skip])
	}
	s.c, s.pos = c, off
}

// XOR sets dst to src XOR the keystream at the current offset and moves
// the offset on by len(src). dst and src may be the same slice.
func (s *Keystream) XOR(dst, src []byte) {
	s.c.XORKeyStream(dst, src)
	s.pos += int64(len(src))
}

// Fingerprint names the ring without revealing it: the first 128 bits of
// a keyed hash under the name key, in hex. Every key file of one
// repository unwraps to a ring of the same fingerprint; a key file that
// unwraps to another ring belongs to another repository.
func (k *Keyring) Fingerprint() string {
	fk := derive(k.s.nameKey[:], infoFingerprint)
	m := hmac.New(sha256.New, fk[:])
	return fmt.Sprintf("%x", m.Sum(nil)[:16])
}
