package seal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/crypt"
)

// Errors of an encrypted bucket's objects. Each comes wrapped in a
// *backend.Error that names the object's plain key, and is permanent: a
// resend reads the same bytes.
var (
	// ErrAuth: sealed bytes that do not authenticate under the ring: the
	// wrong repository's key, or bytes truncated, tampered with, or
	// moved from another key.
	ErrAuth = crypt.ErrAuth
	// ErrUnknownGeneration: bytes sealed under a data-key generation the
	// ring lacks.
	ErrUnknownGeneration = crypt.ErrUnknownGeneration
	// ErrNotSealed: an object of an encrypted bucket that is not sealed
	// (written by a silt without the key, or planted).
	ErrNotSealed = errors.New("object is not sealed")
	// ErrTooLarge: a sealed object larger than MaxSealedBytes.
	ErrTooLarge = errors.New("sealed object too large")
)

// Magic begins every sealed object. Its first byte is not ASCII, so a
// reader without the key can tell a sealed object from JSON and from a
// frame ("\x89SLT") and say that the bucket is encrypted.
const Magic = "\x89SLE"

// headerLen is the sealed object's header: Magic, the version (1), a zero
// byte, and the data key's generation, big-endian.
const headerLen = 8

// Overhead is what sealing adds to an object: the header, the nonce and
// the tag.
const Overhead = headerLen + crypt.Overhead

// MaxSealedBytes bounds a sealed object (every object but the content
// named ones): index objects are bounded at 64 MiB, control records far
// below, so a larger one is hostile.
const MaxSealedBytes = 256 << 20

// adPrefix binds a sealed object's bytes to its plain key.
const adPrefix = "silt sealed v1 "

// IsSealed reports whether b begins as a sealed object does: what a reader
// without the key checks to say "this bucket is encrypted".
func IsSealed(b []byte) bool { return len(b) >= len(Magic) && string(b[:len(Magic)]) == Magic }

// Store is a backend whose objects are encrypted at rest under a
// repository's keyring: the layer [Open] puts over a store of an
// encrypted bucket. Callers see plain keys and plain bytes; the store
// below sees sealed names, hidden content hashes and ciphertext.
type Store struct {
	backend.Backend
	ring *crypt.Keyring
	kf   *crypt.KeyFile // the key file that unlocked ring, when Open or Init found it
}

// New returns b encrypted under ring. Most callers want [Open], which
// finds the ring in the bucket's key files.
func New(b backend.Backend, ring *crypt.Keyring) *Store { return &Store{Backend: b, ring: ring} }

// Unwrap returns the store below.
func (s *Store) Unwrap() backend.Backend { return s.Backend }

// Ring returns the keyring the store seals under.
func (s *Store) Ring() *crypt.Keyring { return s.ring }

// KeyFile returns the key file that unlocked the ring (nil for New).
func (s *Store) KeyFile() *crypt.KeyFile { return s.kf }

// Of returns the encrypting layer in b's stack, or nil for a plain
// bucket.
func Of(b backend.Backend) *Store {
	for b != nil {
		if s, ok := b.(*Store); ok {
			return s
		}
		u, ok := b.(backend.Unwrapper)
		if !ok {
			return nil
		}
		b = u.Unwrap()
	}
	return nil
}

func (s *Store) ad(key string, header []byte) []byte {
	return append(append([]byte(adPrefix), key...), header...)
}

// Put stores body sealed under the plain key.
func (s *Store) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, cond backend.Cond) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	sk, k := s.stored(key)
	if err := checkLen(key, sk); err != nil {
		return backend.ObjectInfo{}, err
	}
	var info backend.ObjectInfo
	var err error
	switch k {
	case kindRaw:
		return s.Backend.Put(ctx, key, body, size, cond)
	case kindContent:
		if size > crypt.MaxContentBytes {
			return backend.ObjectInfo{}, backend.Permanent("put", key, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, size, int64(crypt.MaxContentBytes)))
		}
		x, xerr := newXORSeeker(body, s.ring.Keystream(key))
		if xerr != nil {
			return backend.ObjectInfo{}, backend.Permanent("put", key, xerr)
		}
		info, err = s.Backend.Put(ctx, sk, x, size, cond)
	default:
		if size > MaxSealedBytes {
			return backend.ObjectInfo{}, backend.Permanent("put", key, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, size, MaxSealedBytes))
		}
		plain := make([]byte, size)
		if _, rerr := io.ReadFull(body, plain); rerr != nil {
			return backend.ObjectInfo{}, backend.Permanent("put", key, fmt.Errorf("read body: %w", rerr))
		}
		sealed := s.seal(key, plain)
		info, err = s.Backend.Put(ctx, sk, bytes.NewReader(sealed), int64(len(sealed)), cond)
		info.Size = size
	}
	info.Key = key
	return info, err
}

func (s *Store) seal(key string, plain []byte) []byte {
	h := []byte(Magic + "\x01\x00\x00\x00")
	binary.BigEndian.PutUint16(h[6:], s.ring.Current())
	_, out := s.ring.Seal(slices.Clip(h), plain, s.ad(key, h))
	return out
}

// open authenticates a sealed object's bytes under key.
func (s *Store) open(key string, stored []byte) ([]byte, error) {
	if !IsSealed(stored) || len(stored) < headerLen || stored[4] != 1 || stored[5] != 0 {
		return nil, backend.Permanent("get", key, fmt.Errorf("%w: %d bytes without a sealed header", ErrNotSealed, len(stored)))
	}
	h := stored[:headerLen]
	gen := binary.BigEndian.Uint16(h[6:])
	plain, err := s.ring.Open(nil, gen, stored[headerLen:], s.ad(key, h))
	if err != nil {
		return nil, backend.Permanent("get", key, err)
	}
	return plain, nil
}

// Get reads the plain key's object and its plain bytes. A sealed object
// is read whole and authenticated before a byte is handed out; a content
// named one is read as asked, ranges included, since its integrity is the
// hash its reader checks.
func (s *Store) Get(ctx context.Context, key string, opts backend.GetOptions) (io.ReadCloser, backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	sk, k := s.stored(key)
	switch k {
	case kindRaw:
		return s.Backend.Get(ctx, key, opts)
	case kindContent:
		rc, info, err := s.Backend.Get(ctx, sk, opts)
		if err != nil {
			return nil, backend.ObjectInfo{}, err
		}
		ks := s.ring.Keystream(key)
		if opts.Range != nil {
			ks.SeekTo(opts.Range.Offset)
		}
		info.Key = key
		return &xorReader{rc: rc, ks: ks}, info, nil
	}
	rng := opts.Range
	opts.Range = nil
	rc, info, err := s.Backend.Get(ctx, sk, opts)
	if err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	defer rc.Close()
	if info.Size > MaxSealedBytes+Overhead {
		return nil, backend.ObjectInfo{}, backend.Permanent("get", key, fmt.Errorf("%w: %d bytes", ErrTooLarge, info.Size))
	}
	stored, err := io.ReadAll(io.LimitReader(rc, MaxSealedBytes+Overhead+1))
	if err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	plain, err := s.open(key, stored)
	if err != nil {
		return nil, backend.ObjectInfo{}, err
	}
	info.Key, info.Size = key, int64(len(plain))
	if rng != nil {
		if !rng.Within(info.Size) {
			return nil, backend.ObjectInfo{}, backend.Permanent("get", key, fmt.Errorf("%w: %d+%d of %d bytes", backend.ErrInvalidRange, rng.Offset, rng.Length, info.Size))
		}
		plain = plain[rng.Offset:rng.End()]
	}
	return io.NopCloser(bytes.NewReader(plain)), info, nil
}

// plainSize is the plain size of a stored object of kind k.
func plainSize(k kind, size int64) int64 {
	if k == kindSealed {
		return max(size-Overhead, 0)
	}
	return size
}

// Stat returns the plain key's info, with its plain size.
func (s *Store) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if err := backend.ValidateKey(key); err != nil {
		return backend.ObjectInfo{}, err
	}
	sk, k := s.stored(key)
	info, err := s.Backend.Stat(ctx, sk)
	info.Key, info.Size = key, plainSize(k, info.Size)
	return info, err
}

// Delete removes the plain key's object.
func (s *Store) Delete(ctx context.Context, key string, cond backend.Cond) error {
	if err := backend.ValidateKey(key); err != nil {
		return err
	}
	sk, _ := s.stored(key)
	return s.Backend.Delete(ctx, sk, cond)
}

// List lists the plain keys under prefix in ascending order. Since sealed
// names do not sort as their plain ones do, it reads the whole listing of
// the stored prefix before its first page; objects it cannot name (not
// written under this ring) and the key files are left out.
func (s *Store) List(ctx context.Context, prefix string, opts backend.ListOptions, fn func(page []backend.ObjectInfo) error) error {
	if err := backend.ValidatePrefix(prefix); err != nil {
		return err
	}
	var all []backend.ObjectInfo
	err := s.Backend.List(ctx, s.storedPrefix(prefix), backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			p, k, ok := s.plain(o.Key)
			if !ok || !strings.HasPrefix(p, prefix) {
				continue
			}
			if k == kindRaw {
				continue // the key files are the raw store's, never the index's
			}
			o.Key, o.Size = p, plainSize(k, o.Size)
			all = append(all, o)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b backend.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	n := opts.PageSize
	if n <= 0 {
		n = backend.DefaultPageSize
	}
	for len(all) > 0 {
		page := all[:min(n, len(all))]
		all = all[len(page):]
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// xorReader yields a content-named object's plain bytes.
type xorReader struct {
	rc io.ReadCloser
	ks *crypt.Keystream
}

func (r *xorReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.ks.XOR(p[:n], p[:n])
	return n, err
}

func (r *xorReader) Close() error { return r.rc.Close() }

// xorSeeker is a Put body XORed with the object's keystream; a seek (a
// resend, a multipart part) moves the keystream with it.
type xorSeeker struct {
	body io.ReadSeeker
	base int64 // the body's position at offset 0 of the object
	ks   *crypt.Keystream
}

func newXORSeeker(body io.ReadSeeker, ks *crypt.Keystream) (*xorSeeker, error) {
	base, err := body.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("seal: put body: %w", err)
	}
	return &xorSeeker{body: body, base: base, ks: ks}, nil
}

func (x *xorSeeker) Read(p []byte) (int, error) {
	n, err := x.body.Read(p)
	x.ks.XOR(p[:n], p[:n])
	return n, err
}

func (x *xorSeeker) Seek(off int64, whence int) (int64, error) {
	if whence == io.SeekStart {
		off += x.base
	}
	pos, err := x.body.Seek(off, whence)
	if err != nil {
		return 0, err
	}
	if pos < x.base || pos-x.base > crypt.MaxContentBytes {
		return 0, fmt.Errorf("seal: seek to %d, before the object's start", pos-x.base)
	}
	x.ks.SeekTo(pos - x.base)
	return pos - x.base, nil
}
