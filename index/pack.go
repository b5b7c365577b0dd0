package index

import (
	"context"
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

// PutPack stores data as the pack named by its hash, create-if-absent, and
// reports whether bytes were sent: a pack already there holds the same
// bytes. On stores without atomic create it looks first (same name, same
// bytes, so a race between two writers is harmless).
func PutPack(ctx context.Context, b backend.Backend, data []byte) (sha string, sent bool, err error) {
	sha = PackSHA(data)
	key := PackKey(sha)
	cond := backend.Cond{IfAbsent: true, ContentNamed: true}
	if caps := b.Capabilities(); !caps.ConditionalPut && !caps.AtomicCreate {
		if ok, err := backend.Exists(ctx, b, key); err != nil || ok {
			return sha, false, err
		}
		cond = backend.Cond{ContentNamed: true}
	}
	_, err = backend.PutBytes(ctx, b, key, data, cond)
	switch {
	case backend.IsPrecondition(err):
		return sha, false, nil
	case err != nil:
		return sha, false, fmt.Errorf("write pack %s: %w", sha, err)
	}
	return sha, true, nil
}
