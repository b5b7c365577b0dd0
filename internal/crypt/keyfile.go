package crypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
)

// KeyFileVersion is the key-file layout this package writes and reads.
const KeyFileVersion = 1

// KDFArgon2id names the only key-derivation function of version 1.
const KDFArgon2id = "argon2id"

// KDFParams are argon2id's costs: passes over memory, memory in KiB, and
// lanes. They are part of the derived key, so a file keeps the ones it
// was wrapped with.
//
// Wrap and DecodeKeyFile accept time 1..10, memory 8 MiB..2 GiB, threads
// 1..16, and TestKDFParams exactly. The floor keeps a passphrase from
// being wrapped cheaply by mistake; the caps matter more: key files live
// in the bucket, which is not trusted, and a file asking for more memory
// or time than these would make every unlock exhaust the machine. 2 GiB
// is RFC 9106's first recommended option, the largest a person would
// choose.
type KDFParams struct {
	Time      uint32 `json:"time"`
	MemoryKiB uint32 `json:"memory_kib"`
	Threads   uint8  `json:"threads"`
}

// DefaultKDFParams is RFC 9106's second recommended option (section 4),
// the one for when 2 GiB per unlock is too much: 3 passes over 64 MiB in 4
// lanes. It costs a fraction of a second once per unlock, and an attacker
// 64 MiB and as much time for every passphrase guessed. The lanes are
// part of the hash, so they are fixed rather than taken from the
// machine's cores: four lanes run on fewer cores, only slower.
var DefaultKDFParams = KDFParams{Time: 3, MemoryKiB: 64 << 10, Threads: 4}

// TestKDFParams costs almost nothing, for tests only: a key file wrapped
// with them protects its passphrase hardly at all. DecodeKeyFile accepts
// them, exactly, so tests of any package can write and read key files
// fast; no other parameters below the floor are accepted.
var TestKDFParams = KDFParams{Time: 1, MemoryKiB: 64, Threads: 1}

// Bounds of KDFParams (see there).
const (
	minTime, maxTime           = 1, 10
	minMemoryKiB, maxMemoryKiB = 8 << 10, 2 << 20
	minThreads, maxThreads     = 1, 16
)

func (p KDFParams) check() error {
	if p == TestKDFParams {
		return nil
	}
	switch {
	case p.Time < minTime || p.Time > maxTime:
		return fmt.Errorf("argon2id time %d, want %d..%d", p.Time, minTime, maxTime)
	case p.MemoryKiB < minMemoryKiB || p.MemoryKiB > maxMemoryKiB:
		return fmt.Errorf("argon2id memory %d KiB, want %d..%d", p.MemoryKiB, minMemoryKiB, maxMemoryKiB)
	case p.Threads < minThreads || p.Threads > maxThreads:
		return fmt.Errorf("argon2id threads %d, want %d..%d", p.Threads, minThreads, maxThreads)
	}
	return nil
}

// KeyFile is a user key: the keyring wrapped under a key derived from a
// passphrase. Its JSON (EncodeKeyFile) is what is stored, later at
// .silt/keys/{ID}.json. It holds no secret in the clear: everything but
// Data is public, and Data opens only with the passphrase.
//
// Adding a key is another Wrap of the same ring under a new passphrase
// (new ID, new salt); removing one is deleting its file; rotation reaches
// a file by wrapping the rotated ring again.
type KeyFile struct {
	// Version is KeyFileVersion.
	Version int
	// ID is 8 random bytes in lowercase hex: it names the file, so
	// DecodeKeyFile accepts nothing else (no path can hide in it).
	ID string
	// Created is when the file was wrapped, UTC, to the second.
	Created time.Time
	// Label says whose key this is (a host, a user), for people listing
	// keys: at most 256 bytes of text without control characters, and
	// never a secret. It is not authenticated.
	Label string
	// KDF is KDFArgon2id.
	KDF string
	// Params are the KDF's costs.
	Params KDFParams
	// Salt is the KDF's salt, 16 random bytes.
	Salt []byte
	// Data is the wrapped keyring: a random nonce, then the serialised
	// ring sealed with XChaCha20-Poly1305 (associated data
	// "silt key file v1 " + ID).
	Data []byte
}

const (
	saltLen  = 16
	idLen    = 8
	maxLabel = 256
	// maxKeyFile bounds what DecodeKeyFile reads: a ring of all 65535
	// generations in base64 is about 3 MiB.
	maxKeyFile = 4 << 20
)

// adPrefix binds a wrapped keyring to its file's id.
const adPrefix = "silt key file v1 "

// Wrap returns a new key file holding ring, wrapped under passphrase with
// argon2id at p, with a new random id and salt. label is the file's
// public Label.
func Wrap(ring *Keyring, passphrase []byte, p KDFParams, label string) (*KeyFile, error) {
	if ring == nil || ring.s == nil {
		return nil, errors.New("crypt: wrap: no keyring")
	}
	if len(passphrase) == 0 {
		return nil, fmt.Errorf("crypt: wrap: %w", ErrEmptyPassphrase)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("crypt: wrap: %w", err)
	}
	if err := checkLabel(label); err != nil {
		return nil, fmt.Errorf("crypt: wrap: %w", err)
	}
	var id [idLen]byte
	salt := make([]byte, saltLen)
	nonce := make([]byte, chacha20poly1305.NonceSizeX, Overhead+ringLen(len(ring.Generations())))
	for _, b := range [][]byte{id[:], salt, nonce} {
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("crypt: wrap: %w", err)
		}
	}
	k := &KeyFile{
		Version: KeyFileVersion,
		ID:      hex.EncodeToString(id[:]),
		Created: time.Now().UTC().Truncate(time.Second),
		Label:   label,
		KDF:     KDFArgon2id,
		Params:  p,
		Salt:    salt,
	}
	a := k.wrapAEAD(passphrase)
	plain := ring.marshal()
	k.Data = a.Seal(nonce, nonce, plain, []byte(adPrefix+k.ID))
	clear(plain)
	return k, nil
}

// wrapAEAD derives the file's wrapping key from passphrase.
func (k *KeyFile) wrapAEAD(passphrase []byte) cipher.AEAD {
	key := argon2.IDKey(passphrase, k.Salt, k.Params.Time, k.Params.MemoryKiB, k.Params.Threads, KeySize)
	a := newAEAD([KeySize]byte(key))
	clear(key)
	return a
}

// Unwrap returns the keyring k holds. A passphrase that does not open it
// is ErrWrongPassphrase; a file that is not well formed,
// ErrMalformedKeyFile.
func (k *KeyFile) Unwrap(passphrase []byte) (*Keyring, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	if len(passphrase) == 0 {
		return nil, fmt.Errorf("key file %s: %w", k.ID, ErrEmptyPassphrase)
	}
	nonce, ct := k.Data[:chacha20poly1305.NonceSizeX], k.Data[chacha20poly1305.NonceSizeX:]
	plain, err := k.wrapAEAD(passphrase).Open(nil, nonce, ct, []byte(adPrefix+k.ID))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", k.ID, ErrWrongPassphrase)
	}
	defer clear(plain)
	ring, err := unmarshalRing(plain)
	if err != nil {
		// Authenticated, so written by a silt: a later format, or a bug.
		return nil, fmt.Errorf("%w: key file %s: %v", ErrMalformedKeyFile, k.ID, err)
	}
	return ring, nil
}

// UnlockAny returns the ring of the first of files that passphrase
// opens, and that file. None opening is ErrWrongPassphrase; no files,
// ErrNoKey. Each try costs one argon2id derivation.
func UnlockAny(files []*KeyFile, passphrase []byte) (*Keyring, *KeyFile, error) {
	if len(files) == 0 {
		return nil, nil, ErrNoKey
	}
	if len(passphrase) == 0 {
		return nil, nil, ErrEmptyPassphrase
	}
	malformed := 0
	for _, f := range files {
		if f == nil {
			malformed++
			continue
		}
		ring, err := f.Unwrap(passphrase)
		if err == nil {
			return ring, f, nil
		}
		if !errors.Is(err, ErrWrongPassphrase) {
			malformed++
		}
	}
	if malformed > 0 {
		return nil, nil, fmt.Errorf("%w: none of %d key files opens (%d malformed)", ErrWrongPassphrase, len(files), malformed)
	}
	return nil, nil, fmt.Errorf("%w: none of %d key files opens", ErrWrongPassphrase, len(files))
}

// keyFileJSON is a key file as stored.
type keyFileJSON struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Created string    `json:"created"`
	Label   string    `json:"label,omitempty"`
	KDF     string    `json:"kdf"`
	Params  KDFParams `json:"params"`
	Salt    []byte    `json:"salt"`
	Data    []byte    `json:"data"`
}

// EncodeKeyFile returns k as stored: indented JSON, base64 for bytes.
func EncodeKeyFile(k *KeyFile) []byte {
	b, err := json.MarshalIndent(keyFileJSON{
		Version: k.Version,
		ID:      k.ID,
		Created: k.Created.UTC().Format(time.RFC3339),
		Label:   k.Label,
		KDF:     k.KDF,
		Params:  k.Params,
		Salt:    k.Salt,
		Data:    k.Data,
	}, "", "  ")
	if err != nil {
		panic(err) // strings, numbers and bytes always marshal
	}
	return append(b, '\n')
}

// DecodeKeyFile returns the key file data holds. It is strict, since a
// key file comes from the bucket: unknown fields or trailing data, an
// unknown version or KDF, parameters out of bounds (KDFParams), a salt
// not of 16 bytes, an id not of 16 lowercase hex digits, a created time
// not in RFC 3339 UTC to the second: each is ErrMalformedKeyFile, wrapped
// with what is wrong.
func DecodeKeyFile(data []byte) (*KeyFile, error) {
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformedKeyFile, len(data), maxKeyFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w keyFileJSON
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedKeyFile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrMalformedKeyFile)
	}
	created, err := time.Parse(time.RFC3339, w.Created)
	if err != nil || created.Format(time.RFC3339) != w.Created || created.Location() != time.UTC {
		return nil, fmt.Errorf("%w: created %q is not RFC 3339 UTC to the second", ErrMalformedKeyFile, w.Created)
	}
	k := &KeyFile{
		Version: w.Version,
		ID:      w.ID,
		Created: created,
		Label:   w.Label,
		KDF:     w.KDF,
		Params:  w.Params,
		Salt:    w.Salt,
		Data:    w.Data,
	}
	if err := k.check(); err != nil {
		return nil, err
	}
	return k, nil
}

// check reports what is wrong with k, as ErrMalformedKeyFile.
func (k *KeyFile) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformedKeyFile, fmt.Sprintf(format, args...))
	}
	switch {
	case k == nil:
		return bad("no key file")
	case k.Version != KeyFileVersion:
		return bad("version %d (this silt reads %d)", k.Version, KeyFileVersion)
	case !isID(k.ID):
		return bad("id %q is not %d lowercase hex digits", k.ID, 2*idLen)
	case k.Created.IsZero():
		return bad("no created time")
	case k.KDF != KDFArgon2id:
		return bad("kdf %q (this silt knows %q)", k.KDF, KDFArgon2id)
	case len(k.Salt) != saltLen:
		return bad("salt of %d bytes, want %d", len(k.Salt), saltLen)
	case len(k.Data) < Overhead+ringLen(1) || len(k.Data) > Overhead+ringLen(maxGenerations):
		return bad("wrapped keyring of %d bytes, want %d..%d", len(k.Data), Overhead+ringLen(1), Overhead+ringLen(maxGenerations))
	}
	if err := k.Params.check(); err != nil {
		return bad("%v", err)
	}
	if err := checkLabel(k.Label); err != nil {
		return bad("%v", err)
	}
	return nil
}

func isID(s string) bool {
	if len(s) != 2*idLen {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkLabel refuses control characters as well as invalid text: a
// label is printed to terminals by people listing keys.
func checkLabel(l string) error {
	if len(l) > maxLabel {
		return fmt.Errorf("label of %d bytes, at most %d", len(l), maxLabel)
	}
	if !utf8.ValidString(l) {
		return errors.New("label is not UTF-8")
	}
	for _, r := range l {
		if unicode.IsControl(r) {
			return fmt.Errorf("label holds control character %U", r)
		}
	}
	return nil
}

// The keyring serialised, inside a key file's Data: a version byte, the
// name key, a big-endian uint16 count, then each generation's id
// (uint16, strictly ascending, from 1) and secret.
const (
	ringVersion    = 1
	maxGenerations = 1<<16 - 1
	genLen         = 2 + KeySize
)

func ringLen(gens int) int { return 1 + KeySize + 2 + gens*genLen }

func (k *Keyring) marshal() []byte {
	s := k.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := make([]byte, 0, ringLen(len(s.gens)))
	b = append(b, ringVersion)
	b = append(b, s.nameKey[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.gens)))
	for _, g := range s.gens {
		b = binary.BigEndian.AppendUint16(b, g.id)
		b = append(b, g.secret[:]...)
	}
	return b
}

func unmarshalRing(b []byte) (*Keyring, error) {
	if len(b) < ringLen(1) {
		return nil, fmt.Errorf("keyring of %d bytes, at least %d", len(b), ringLen(1))
	}
	if b[0] != ringVersion {
		return nil, fmt.Errorf("keyring version %d (this silt reads %d)", b[0], ringVersion)
	}
	n := int(binary.BigEndian.Uint16(b[1+KeySize:]))
	if n == 0 || len(b) != ringLen(n) {
		return nil, fmt.Errorf("keyring of %d bytes for %d generations, want %d", len(b), n, ringLen(n))
	}
	s := newRingState([KeySize]byte(b[1:]))
	var last uint16
	for i := range n {
		e := b[ringLen(i):][:genLen]
		id := binary.BigEndian.Uint16(e)
		if id <= last {
			return nil, fmt.Errorf("keyring generation %d after %d: ids must ascend from 1", id, last)
		}
		last = id
		s.gens = append(s.gens, newGeneration(id, [KeySize]byte(e[2:])))
	}
	return &Keyring{s: s}, nil
}
