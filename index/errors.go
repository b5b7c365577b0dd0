package index

import (
	"errors"
	"fmt"
)

// ErrCorruptIndex is returned (wrapped in a *FormatError) when a manifest or
// shard does not parse or breaks a rule of the format.
var ErrCorruptIndex = errors.New("corrupt remote index")

// ErrNewerFormat is returned (wrapped in a *FormatError) when the bucket was
// written by a newer silt whose format this version cannot read safely.
var ErrNewerFormat = errors.New("remote index has a newer format")

// ErrOlderFormat is returned (wrapped in a *FormatError) when the bucket
// holds format 1, which kept data at its real paths. Format 2 does not read
// it: push the caches again into an empty bucket (or prefix).
var ErrOlderFormat = errors.New("remote index has format 1, which this silt no longer reads; push into an empty bucket or prefix")

// ErrIndexTooLarge is returned (wrapped in a *FormatError) when a manifest
// or shard is larger than MaxManifestBytes or MaxShardBytes. Nothing past
// the bound is read.
var ErrIndexTooLarge = errors.New("remote index object too large")

// ErrEncrypted is returned (wrapped in a *FormatError) when an index
// object is sealed (package backend/seal): the bucket is encrypted and was
// opened without its passphrase. Nothing is read past that object.
var ErrEncrypted = errors.New("bucket is encrypted: open it with its passphrase (SILT_PASSWORD or --password-file)")

// FormatError says which index object is bad and why.
type FormatError struct {
	Key    string
	Reason string
	Err    error // ErrCorruptIndex, ErrNewerFormat, ErrOlderFormat, ErrIndexTooLarge or ErrEncrypted
}

func (e *FormatError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Key, e.Reason, e.Err) }

// Unwrap returns the sentinel.
func (e *FormatError) Unwrap() error { return e.Err }

func corrupt(key, format string, args ...any) error {
	return &FormatError{Key: key, Reason: fmt.Sprintf(format, args...), Err: ErrCorruptIndex}
}

// ErrInvalidPath is returned (wrapped in a *PathError) when a path could
// escape a cache directory, names silt's own files, or cannot be carried by
// the index.
var ErrInvalidPath = errors.New("invalid path")

// PathError says which path was refused and why.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// Is makes errors.Is(err, ErrInvalidPath) true.
func (e *PathError) Is(target error) bool { return target == ErrInvalidPath }

// ErrCorruptObject is returned (wrapped in an *ObjectError) when a data
// object's bytes do not hash to the sha256 its entry names, or its size
// differs. Such bytes are never installed; reading again does not help.
var ErrCorruptObject = errors.New("data object does not match its index entry")

// ErrMissingObject is returned (wrapped in an *ObjectError) when a
// committed entry names an object the store does not hold.
var ErrMissingObject = errors.New("data object named by the index is missing")

// ObjectError names the path whose object is corrupt or missing.
type ObjectError struct {
	Path   string
	SHA256 string
	Reason string
	Err    error // ErrCorruptObject or ErrMissingObject
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s (object %s): %s: %v", e.Path, e.SHA256, e.Reason, e.Err)
}

// Unwrap returns the sentinel.
func (e *ObjectError) Unwrap() error { return e.Err }

// ErrMigrateRequired is returned (wrapped in a *MigrateRequiredError) by a
// commit to a bucket in a format this silt reads but no longer writes
// (2, 3 or 4). Nothing is written: run Migrate (silt migrate) first.
var ErrMigrateRequired = errors.New("the bucket is in an older format: run silt migrate")

// MigrateRequiredError names the format of a bucket a commit refused.
type MigrateRequiredError struct {
	Format int
}

func (e *MigrateRequiredError) Error() string {
	return fmt.Sprintf("the bucket is in format %d, which this silt reads but no longer writes: run `silt migrate` (online: writers beside it are carried over)", e.Format)
}

// Unwrap returns ErrMigrateRequired.
func (e *MigrateRequiredError) Unwrap() error { return ErrMigrateRequired }

// Writable returns a *MigrateRequiredError for a head of a bucket in a
// format this silt reads but does not write, and nil for one it writes or
// an empty bucket (which a commit creates in DefaultFormat). A log of
// deltas with no commit yet is the empty state in any of its formats: its
// first entry says the format.
func Writable(h Head) error {
	if f := h.Manifest.Format; h.Version != "" && f != DefaultFormat && !(isDeltaLog(f) && h.Manifest.Seq == genesisSeq) {
		return &MigrateRequiredError{Format: f}
	}
	return nil
}
