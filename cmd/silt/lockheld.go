package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/siltsync/silt/index"
	"github.com/siltsync/silt/lock"
)

// heldLease is what silt lock acquire run on a cache keeps in the cache
// (.silt/held/KEY.json, never synced), so that silt push --lock KEY from
// the same cache commits under that lease instead of being refused by it.
type heldLease struct {
	URL       string `json:"url"`
	Namespace string `json:"namespace"`
	Nonce     string `json:"nonce"`
	Token     uint64 `json:"token"`
}

func heldPath(dir, key string) string {
	return filepath.Join(dir, index.InternalDir, "held", url.PathEscape(key)+".json")
}

// keepHeld records the lease acquire took on the cache dir.
func keepHeld(dir string, cfg binding, key string, lease *lock.Lease) error {
	data, err := json.Marshal(heldLease{cfg.URL, cfg.Namespace, lease.Nonce(), lease.Token()})
	if err != nil {
		return err
	}
	p := heldPath(dir, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o600)
}

// readHeld returns the lease the cache dir holds on key for its binding,
// if it recorded one.
func readHeld(dir string, cfg binding, key string) (heldLease, bool) {
	var h heldLease
	data, err := os.ReadFile(heldPath(dir, key))
	if err != nil || json.Unmarshal(data, &h) != nil || h.URL != cfg.URL || h.Namespace != cfg.Namespace {
		return heldLease{}, false
	}
	return h, true
}

// dropHeld forgets the cache's lease on key (released, or lapsed).
func dropHeld(dir, key string) { _ = os.Remove(heldPath(dir, key)) }

// ownLease tells whether l is held now under the lease the cache dir
// recorded, and returns its fencing token: push --lock then commits under
// it, neither acquiring nor releasing. A recorded lease that lapsed or
// was taken over is forgotten.
func ownLease(ctx context.Context, l *lock.Lock, dir string, cfg binding, key string) (uint64, bool, error) {
	h, ok := readHeld(dir, cfg, key)
	if !ok {
		return 0, false, nil
	}
	info, err := l.Inspect(ctx)
	if err != nil {
		return 0, false, err
	}
	if info == nil || info.Nonce != h.Nonce {
		dropHeld(dir, key)
		return 0, false, nil
	}
	return h.Token, true, nil
}

// lockHeldError is the refusal of a lock another holder has: when its
// lease lapses, by the holder's last heartbeat and TTL, rather than
// advice to break it.
func lockHeldError(what, waitFlag string, err error) error {
	var te *lock.TimeoutError
	if !errors.As(err, &te) || te.Holder.Nonce == "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	h := te.Holder
	hint := fmt.Sprintf("%s holds it", h.Holder)
	if left := time.Until(h.HeartbeatAt.Add(h.TTL)).Round(time.Second); left > 0 {
		hint += fmt.Sprintf("; its lease lapses in %v unless renewed (wait with %s %v, or ask the holder to release it)", left, waitFlag, left+time.Second)
	} else {
		hint += "; its lease has lapsed by its own clock, and a retry takes it"
	}
	return &refusedError{msg: fmt.Sprintf("%s: %v", what, err), hint: hint}
}
