package index

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/siltsync/silt/backend"
)

// PackSHA returns the name of a pack: the sha256 of its bytes.
func PackSHA(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// PutPack stores data as a pack and returns its name. The name is the
// sha256 of data, written create-if-absent; when a pack of that name is
// already there, data is stored again followed by a random trailer
// (PackTrailer bytes no entry names), under the hash of the whole: a pack
// found in the store may be garbage that a concurrent GC has already
// decided to delete, so a writer never adopts one (see FORMAT.md,
// "Garbage collection"). The members' offsets are the same either way.
// sent is always true on success: the bytes went up. On stores without
// atomic create it looks first.
func PutPack(ctx context.Context, b backend.Backend, data []byte) (sha string, sent bool, err error) {
	sha = PackSHA(data)
	created, err := putAbsent(ctx, b, PackKey(sha), data)
	if err != nil || created {
		return sha, created, err
	}
	salted := append(append(make([]byte, 0, len(data)+PackTrailer), data...), Trailer()...)
	sha = PackSHA(salted)
	// The name holds a fresh random trailer: a pack already there is this
	// write's own, landed before a lost acknowledgement.
	_, err = putAbsent(ctx, b, PackKey(sha), salted)
	return sha, err == nil, err
}

// PackTrailer is the size of the random trailer of a re-stored pack.
const PackTrailer = 32

// Trailer returns PackTrailer random bytes.
func Trailer() []byte {
	t := make([]byte, PackTrailer)
	_, _ = rand.Read(t) // crypto/rand.Read never fails
	return t
}

// putAbsent writes data at key unless something is there, and reports
// whether it wrote.
func putAbsent(ctx context.Context, b backend.Backend, key string, data []byte) (bool, error) {
	cond := backend.Cond{IfAbsent: true, ContentNamed: true}
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		if ok, err := backend.Exists(ctx, b, key); err != nil || ok {
			return false, err
		}
		cond = backend.Cond{ContentNamed: true}
	}
	_, err := backend.PutBytes(ctx, b, key, data, cond)
	switch {
	case backend.IsPrecondition(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("write pack %s: %w", key, err)
	}
	return true, nil
}
