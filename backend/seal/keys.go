package seal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/internal/crypt"
)

// Errors of the key files.
var (
	// ErrNotEncrypted: a bucket with no encryption config.
	ErrNotEncrypted = errors.New("bucket is not encrypted")
	// ErrAlreadyEncrypted: Init of a bucket that has its config already.
	ErrAlreadyEncrypted = errors.New("bucket is encrypted already")
	// ErrNotEmpty: Init of a bucket that holds objects: they are plain,
	// and a bucket is encrypted from its first object on.
	ErrNotEmpty = errors.New("bucket is not empty")
	// ErrWrongPassphrase: no key file of the bucket opens with the
	// passphrase given.
	ErrWrongPassphrase = crypt.ErrWrongPassphrase
	// ErrLastKey: removing the only key file, which would lock everyone
	// out for good.
	ErrLastKey = errors.New("the last key file")
	// ErrNoSuchKey: a key id the bucket has no file for.
	ErrNoSuchKey = errors.New("no such key file")
	// ErrMalformedConfig: an encryption config this silt cannot read.
	ErrMalformedConfig = errors.New("malformed encryption config")
)

// configKey is the encryption config: it says the bucket is encrypted and
// names its ring. Its create-if-absent decides which of two racing Inits
// owns the bucket.
const configKey = KeysPrefix + "config"

// Scheme names this package's construction in the config.
const Scheme = "silt-seal-v1"

type config struct {
	Version int    `json:"version"`
	Scheme  string `json:"scheme"`
	Ring    string `json:"ring"` // the ring's Fingerprint
}

// Encrypted reports whether the bucket is encrypted: one Stat of its
// config.
func Encrypted(ctx context.Context, b backend.Backend) (bool, error) {
	return backend.Exists(ctx, b, configKey)
}

func readConfig(ctx context.Context, b backend.Backend) (config, error) {
	data, _, err := backend.ReadAll(ctx, b, configKey, backend.GetOptions{}, 64<<10)
	if backend.IsNotExist(err) {
		return config{}, ErrNotEncrypted
	}
	if err != nil {
		return config{}, err
	}
	var c config
	if err := json.Unmarshal(data, &c); err != nil || c.Version != 1 || c.Scheme != Scheme || !isHex(c.Ring, 32) {
		return config{}, fmt.Errorf("%w: %s", ErrMalformedConfig, configKey)
	}
	return c, nil
}

// keyFileKey is the key of a key file.
func keyFileKey(id string) string { return KeysPrefix + id + ".json" }

// Init encrypts an empty bucket: a new ring, wrapped under passphrase in
// the bucket's first key file, and the config. It returns the bucket
// encrypted, ready for the index's creation, and the key file.
func Init(ctx context.Context, b backend.Backend, passphrase []byte, p crypt.KDFParams, label string) (*Store, *crypt.KeyFile, error) {
	if _, err := readConfig(ctx, b); err == nil {
		return nil, nil, ErrAlreadyEncrypted
	} else if !errors.Is(err, ErrNotEncrypted) {
		return nil, nil, err
	}
	if k, err := anyObject(ctx, b); err != nil {
		return nil, nil, err
	} else if k != "" {
		return nil, nil, fmt.Errorf("%w (%s): push its caches into an encrypted bucket of their own", ErrNotEmpty, k)
	}
	ring, err := crypt.NewKeyring()
	if err != nil {
		return nil, nil, err
	}
	kf, err := addKey(ctx, b, ring, passphrase, p, label)
	if err != nil {
		return nil, nil, err
	}
	cfg, _ := json.Marshal(config{Version: 1, Scheme: Scheme, Ring: ring.Fingerprint()})
	if _, err := backend.PutBytes(ctx, b, configKey, cfg, backend.Cond{IfAbsent: true}); err != nil {
		// Another Init won the race: its ring is the bucket's, and this
		// key file wraps a ring no one will use.
		_ = b.Delete(ctx, keyFileKey(kf.ID), backend.Cond{})
		if backend.IsPrecondition(err) {
			return nil, nil, ErrAlreadyEncrypted
		}
		return nil, nil, err
	}
	st := New(b, ring)
	st.kf = kf
	return st, kf, nil
}

// anyObject returns the first key of b outside .silt/keys/, or "".
func anyObject(ctx context.Context, b backend.Backend) (string, error) {
	first := ""
	err := b.List(ctx, "", backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if !strings.HasPrefix(o.Key, KeysPrefix) {
				first = o.Key
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", err
	}
	return first, nil
}

var errStop = errors.New("stop")

func addKey(ctx context.Context, b backend.Backend, ring *crypt.Keyring, passphrase []byte, p crypt.KDFParams, label string) (*crypt.KeyFile, error) {
	kf, err := crypt.Wrap(ring, passphrase, p, label)
	if err != nil {
		return nil, err
	}
	if _, err := backend.PutBytes(ctx, b, keyFileKey(kf.ID), crypt.EncodeKeyFile(kf), backend.Cond{IfAbsent: true}); err != nil {
		return nil, fmt.Errorf("seal: write key file %s: %w", kf.ID, err)
	}
	return kf, nil
}

// Keys returns the bucket's key files, by id. A file that does not
// decode is left out of the list and counted in bad.
func Keys(ctx context.Context, b backend.Backend) (files []*crypt.KeyFile, bad int, err error) {
	var keys []string
	err = b.List(ctx, KeysPrefix, backend.ListOptions{}, func(page []backend.ObjectInfo) error {
		for _, o := range page {
			if strings.HasSuffix(o.Key, ".json") {
				keys = append(keys, o.Key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	for _, k := range keys {
		data, _, err := backend.ReadAll(ctx, b, k, backend.GetOptions{}, 4<<20)
		if backend.IsNotExist(err) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, 0, err
		}
		kf, err := crypt.DecodeKeyFile(data)
		if err != nil || keyFileKey(kf.ID) != k {
			bad++
			continue
		}
		files = append(files, kf)
	}
	slices.SortFunc(files, func(a, b *crypt.KeyFile) int { return strings.Compare(a.ID, b.ID) })
	return files, bad, nil
}

// Unlock returns the bucket's ring, opened with passphrase, and the key
// file that opened it. Each key file tried costs one argon2id
// derivation; a file that opens to a ring other than the config's (a
// stray from a lost Init race, a planted one) is not the bucket's key.
func Unlock(ctx context.Context, b backend.Backend, passphrase []byte) (*crypt.Keyring, *crypt.KeyFile, error) {
	cfg, err := readConfig(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	files, bad, err := Keys(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("seal: %w under %s (%d malformed)", crypt.ErrNoKey, KeysPrefix, bad)
	}
	for _, f := range files {
		ring, err := f.Unwrap(passphrase)
		if err != nil {
			if errors.Is(err, crypt.ErrEmptyPassphrase) {
				return nil, nil, err
			}
			continue
		}
		if ring.Fingerprint() == cfg.Ring {
			return ring, f, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: none of the bucket's %d key files opens with it", ErrWrongPassphrase, len(files))
}

// Open returns b as its readers use it: b itself when passphrase is nil
// (a plain bucket costs no request more) or the bucket is not encrypted,
// and the bucket encrypted under its ring otherwise.
func Open(ctx context.Context, b backend.Backend, passphrase []byte) (backend.Backend, error) {
	if passphrase == nil {
		return b, nil
	}
	ring, kf, err := Unlock(ctx, b, passphrase)
	if errors.Is(err, ErrNotEncrypted) {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	st := New(b, ring)
	st.kf = kf
	return st, nil
}

// AddKey adds a key file wrapping ring under passphrase.
func AddKey(ctx context.Context, b backend.Backend, ring *crypt.Keyring, passphrase []byte, p crypt.KDFParams, label string) (*crypt.KeyFile, error) {
	if _, err := readConfig(ctx, b); err != nil {
		return nil, err
	}
	return addKey(ctx, b, ring, passphrase, p, label)
}

// RemoveKey deletes the key file id. The last key file is not removed
// (ErrLastKey): without one nobody opens the bucket again.
func RemoveKey(ctx context.Context, b backend.Backend, id string) error {
	files, _, err := Keys(ctx, b)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(files, func(f *crypt.KeyFile) bool { return f.ID == id }) {
		return fmt.Errorf("%w: %q", ErrNoSuchKey, id)
	}
	if len(files) == 1 {
		return fmt.Errorf("%w: %s is the bucket's only key file; add another first", ErrLastKey, id)
	}
	return b.Delete(ctx, keyFileKey(id), backend.Cond{})
}

// Rotate replaces the key file old by a new one under passphrase: the
// ring, and so every object, stays as it is. The new file is written
// before the old one goes, so a failure between leaves both.
func Rotate(ctx context.Context, b backend.Backend, ring *crypt.Keyring, old *crypt.KeyFile, passphrase []byte, p crypt.KDFParams) (*crypt.KeyFile, error) {
	kf, err := AddKey(ctx, b, ring, passphrase, p, old.Label)
	if err != nil {
		return nil, err
	}
	if err := b.Delete(ctx, keyFileKey(old.ID), backend.Cond{}); err != nil {
		return kf, fmt.Errorf("seal: new key file %s written, old %s not removed: %w", kf.ID, old.ID, err)
	}
	return kf, nil
}
