// Package crypt is the cryptography of client-side encryption (issue 35):
// a repository's secret (the Keyring), authenticated encryption of the
// bytes of every stored object under it, keyed names that hide content
// hashes and path names from the bucket, and key files that wrap the
// keyring under a passphrase so keys can be added, rotated and removed
// without rewriting data.
//
// Package crypt knows nothing of stores, frames or the bucket's layout:
// callers bind an object's name and header through the associated data
// of Seal and Open, and name the object in their own errors, which wrap
// the sentinels here.
//
// An outside reader of the bucket learns sizes and counts, and which
// sealed names are equal (SealName is deterministic by design), never
// names or bytes.
package crypt

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sentinels the errors of this package wrap.
var (
	// ErrUnknownGeneration: bytes sealed under a data-key generation that
	// this keyring does not hold (a newer ring sealed them, or the wrong
	// repository's).
	ErrUnknownGeneration = errors.New("sealed under a key generation this keyring lacks")
	// ErrAuth: sealed bytes that do not authenticate: the wrong key, or
	// bytes truncated, tampered with, or moved to another name.
	ErrAuth = errors.New("sealed bytes do not authenticate")
	// ErrWrongPassphrase: a key file that does not open with the
	// passphrase given (or whose wrapped keyring was tampered with: the
	// two cannot be told apart).
	ErrWrongPassphrase = errors.New("wrong passphrase")
	// ErrMalformedKeyFile: a key file this silt cannot read.
	ErrMalformedKeyFile = errors.New("malformed key file")
	// ErrNoKey: no key file to unlock with.
	ErrNoKey = errors.New("no key file")
	// ErrEmptyPassphrase: a passphrase source that holds nothing.
	ErrEmptyPassphrase = errors.New("empty passphrase")
)

// KeySize is the size of every secret and derived key of this package.
const KeySize = 32

// Overhead is what Seal adds to a plaintext: the random nonce before the
// ciphertext and the authentication tag after it.
const Overhead = chacha20poly1305.NonceSizeX + chacha20poly1305.Overhead

// HKDF info strings: one per use, so no two uses ever share a key. A
// change of construction takes a new string ("v2"), never a new meaning
// for an old one.
const (
	infoData   = "silt data v1"
	infoNames  = "silt names v1"
	infoPathIV = "silt path iv v1"
	infoPath   = "silt path v1"
)

// Keyring is a repository's secret: a name key (for keyed content
// addresses and sealed path names) and one or more data-key generations.
// New objects are sealed under the newest generation; older ones stay to
// open what they sealed. Rotation never changes the name key, since every
// content address and sealed path is a function of it.
//
// A Keyring has no exported fields and prints as a redacted text in every
// fmt verb, in JSON and in slog, so it cannot leak into a log or an
// error. The zero Keyring holds no key: use NewKeyring or Unwrap. Its
// methods are safe for concurrent use.
type Keyring struct {
	// s is behind a pointer so that printing a Keyring value (not a
	// pointer) through reflection shows an address, not the keys.
	s *ringState
}

type ringState struct {
	nameKey [KeySize]byte
	// Derived from nameKey once: they never change.
	namesKey, pathIVKey [KeySize]byte
	pathAEAD            cipher.AEAD

	mu   sync.RWMutex
	gens []*generation // ascending id; the last is current

	contentOnce sync.Once
	cs          *contentState // content.go
}

type generation struct {
	id     uint16
	secret [KeySize]byte
	aead   cipher.AEAD
}

// derive returns the key for info under secret (HKDF-SHA256, no salt:
// every secret here is uniformly random already).
func derive(secret []byte, info string) [KeySize]byte {
	k, err := hkdf.Key(sha256.New, secret, nil, info, KeySize)
	if err != nil {
		panic(err) // SHA-256 and 32 bytes: HKDF cannot fail
	}
	return [KeySize]byte(k)
}

// newAEAD returns XChaCha20-Poly1305 under key. Its 24-byte nonces are
// long enough to be drawn at random: the caches of one repository seal
// without coordinating, and a nonce repeated under one key would be
// fatal.
func newAEAD(key [KeySize]byte) cipher.AEAD {
	a, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		panic(err) // a key of KeySize bytes
	}
	return a
}

func newGeneration(id uint16, secret [KeySize]byte) *generation {
	return &generation{id: id, secret: secret, aead: newAEAD(derive(secret[:], infoData))}
}

func newRingState(nameKey [KeySize]byte) *ringState {
	s := &ringState{nameKey: nameKey}
	s.namesKey = derive(nameKey[:], infoNames)
	s.pathIVKey = derive(nameKey[:], infoPathIV)
	s.pathAEAD = newAEAD(derive(nameKey[:], infoPath))
	return s
}

func randomKey() ([KeySize]byte, error) {
	var k [KeySize]byte
	_, err := rand.Read(k[:])
	return k, err
}

// NewKeyring returns a new repository secret: a random name key and one
// data-key generation, id 1.
func NewKeyring() (*Keyring, error) {
	nameKey, err := randomKey()
	if err != nil {
		return nil, fmt.Errorf("crypt: new keyring: %w", err)
	}
	secret, err := randomKey()
	if err != nil {
		return nil, fmt.Errorf("crypt: new keyring: %w", err)
	}
	s := newRingState(nameKey)
	s.gens = []*generation{newGeneration(1, secret)}
	return &Keyring{s: s}, nil
}

// Rotate adds a new data-key generation, which seals from now on, and
// returns its id. The older generations stay, to open what they sealed.
// It panics past 65535 generations, the most a frame's key id can name
// (each rotation is a person's act: the bound is unreachable in use).
func (k *Keyring) Rotate() uint16 {
	secret, err := randomKey()
	if err != nil {
		panic(err) // crypto/rand does not fail since Go 1.24
	}
	s := k.s
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.gens[len(s.gens)-1].id
	if last == ^uint16(0) {
		panic("crypt: keyring has 65535 generations, no id is left")
	}
	s.gens = append(s.gens, newGeneration(last+1, secret))
	return last + 1
}

// Current returns the id of the generation new objects are sealed with
// (0 for the zero Keyring).
func (k *Keyring) Current() uint16 {
	if k == nil || k.s == nil {
		return 0
	}
	return k.current().id
}

func (k *Keyring) current() *generation {
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	return k.s.gens[len(k.s.gens)-1]
}

// Generations returns the ids of the ring's generations, ascending.
func (k *Keyring) Generations() []uint16 {
	if k == nil || k.s == nil {
		return nil
	}
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	ids := make([]uint16, len(k.s.gens))
	for i, g := range k.s.gens {
		ids[i] = g.id
	}
	return ids
}

func (k *Keyring) generation(id uint16) *generation {
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	i, ok := slices.BinarySearchFunc(k.s.gens, id, func(g *generation, id uint16) int { return int(g.id) - int(id) })
	if !ok {
		return nil
	}
	return k.s.gens[i]
}

// Seal encrypts and authenticates plaintext under the current generation,
// bound to ad, and appends the result (a random nonce, the ciphertext and
// its tag: len(plaintext)+Overhead bytes) to dst. It returns the
// generation's id, for the frame's key id, and the extended slice. ad is
// the caller's binding: the object's name and frame header, so that bytes
// moved to another name, or under another header, do not open.
func (k *Keyring) Seal(dst, plaintext, ad []byte) (gen uint16, sealed []byte) {
	g := k.current()
	out := slices.Grow(dst, Overhead+len(plaintext))
	nonce := out[len(out) : len(out)+chacha20poly1305.NonceSizeX]
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail since Go 1.24
	}
	out = out[:len(out)+len(nonce)]
	return g.id, g.aead.Seal(out, nonce, plaintext, ad)
}

// Open authenticates and decrypts what Seal sealed under generation gen
// with the same ad, and appends the plaintext to dst. It fails with
// ErrUnknownGeneration when the ring lacks gen, and with ErrAuth when the
// bytes are short, truncated, tampered with, or bound to another ad.
func (k *Keyring) Open(dst []byte, gen uint16, sealed, ad []byte) ([]byte, error) {
	g := k.generation(gen)
	if g == nil {
		return nil, fmt.Errorf("%w: generation %d (the keyring holds %s)", ErrUnknownGeneration, gen, idList(k.Generations()))
	}
	if len(sealed) < Overhead {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d any sealed bytes have", ErrAuth, len(sealed), Overhead)
	}
	nonce, ct := sealed[:chacha20poly1305.NonceSizeX], sealed[chacha20poly1305.NonceSizeX:]
	out, err := g.aead.Open(dst, nonce, ct, ad)
	if err != nil {
		return nil, fmt.Errorf("%w: generation %d, %d bytes", ErrAuth, gen, len(sealed))
	}
	return out, nil
}

// idList formats generation ids as "1..3" when contiguous, "1, 3" if not.
func idList(ids []uint16) string {
	if len(ids) == 0 {
		return "none"
	}
	if int(ids[len(ids)-1])-int(ids[0]) == len(ids)-1 && len(ids) > 2 {
		return fmt.Sprintf("%d..%d", ids[0], ids[len(ids)-1])
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

// String describes the ring without any key: its generations only.
func (k Keyring) String() string {
	if k.s == nil {
		return "crypt.Keyring(empty)"
	}
	return fmt.Sprintf("crypt.Keyring(generations %s, current %d, keys redacted)", idList(k.Generations()), k.Current())
}

// GoString is String: %#v must not print the keys either.
func (k Keyring) GoString() string { return k.String() }

// Format prints String for every verb, since fmt would otherwise print
// the fields' bytes for verbs such as %d or %x.
func (k Keyring) Format(f fmt.State, verb rune) { fmt.Fprint(f, k.String()) }

// MarshalJSON writes String as a JSON string: a ring is never serialised
// but through Wrap.
func (k Keyring) MarshalJSON() ([]byte, error) { return json.Marshal(k.String()) }

// LogValue is String, for slog.
func (k Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }
