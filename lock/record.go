package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/siltsync/silt/backend"
)

// format is the version of the lock record; a reader refuses any other.
const format = 1

// maxRecordSize bounds what read accepts, so a stray large object at the
// lock's key is an error rather than an allocation.
const maxRecordSize = 64 << 10

// record is the lock object's body. The version is never part of it: it
// comes from the store with each read and write.
type record struct {
	Format     int    `json:"format"`
	Holder     string `json:"holder,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	PID        int    `json:"pid,omitempty"`
	AcquiredAt string `json:"acquiredAt,omitempty"` // RFC 3339, holder's clock, informational
	// HeartbeatAt and Beat change with every heartbeat. Beat is what
	// guarantees the bytes change: a backend whose versions are content
	// hashes (fs) would otherwise give a heartbeat with an unchanged clock
	// the same version, and waiters would think the holder silent.
	HeartbeatAt string `json:"heartbeatAt,omitempty"`
	Beat        uint64 `json:"beat,omitempty"`
	TTLMs       int64  `json:"ttlMs,omitempty"`
	Nonce       string `json:"nonce,omitempty"`
	Token       uint64 `json:"token"`
	Released    bool   `json:"released,omitempty"`
}

func decode(data []byte) (record, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return record{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if r.Format != format {
		return record{}, fmt.Errorf("%w: format %d, want %d", ErrFormat, r.Format, format)
	}
	if r.AcquiredAt != "" {
		if _, err := time.Parse(time.RFC3339Nano, r.AcquiredAt); err != nil {
			return record{}, fmt.Errorf("%w: acquiredAt: %v", ErrFormat, err)
		}
	}
	return r, nil
}

// ttl is the holder's TTL, or fallback for a record without one (which
// this package never writes for a held lock).
func (r *record) ttl(fallback time.Duration) time.Duration {
	if r.TTLMs <= 0 {
		return fallback
	}
	return time.Duration(r.TTLMs) * time.Millisecond
}

func (r *record) info() Info {
	at, _ := time.Parse(time.RFC3339Nano, r.AcquiredAt) // checked by decode
	hb, err := time.Parse(time.RFC3339Nano, r.HeartbeatAt)
	if err != nil {
		hb = at // no heartbeat yet (or an unreadable one): the acquisition is the last sign of life
	}
	return Info{Holder: r.Holder, Hostname: r.Hostname, PID: r.PID, AcquiredAt: at, HeartbeatAt: hb,
		TTL: r.ttl(0), Nonce: r.Nonce, Token: r.Token}
}

// observed is one read of the lock object: rec is nil when it is absent.
type observed struct {
	rec     *record
	version backend.Version
}

// heldBy reports whether the object is an unreleased lock under nonce.
// Only the acquisition that made a nonce writes records carrying it, so
// this is how a holder recognises its own write whose reply it never got.
func (o observed) heldBy(nonce string) bool {
	return o.rec != nil && !o.rec.Released && nonce != "" && o.rec.Nonce == nonce
}

func (l *Lock) read(ctx context.Context) (observed, error) {
	data, info, err := backend.ReadAll(ctx, l.b, l.key, backend.GetOptions{}, maxRecordSize)
	switch {
	case backend.IsNotExist(err):
		return observed{}, nil
	case err != nil:
		return observed{}, err
	}
	rec, err := decode(data)
	if err != nil {
		return observed{}, fmt.Errorf("lock %q: %w", l.key, err)
	}
	return observed{rec: &rec, version: info.Version}, nil
}

func (l *Lock) write(ctx context.Context, key string, v any, cond backend.Cond) (backend.ObjectInfo, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	return backend.PutBytes(ctx, l.b, key, data, cond)
}

// newRecord is the body of a fresh acquisition.
func (l *Lock) newRecord(nonce string, token uint64) record {
	return record{
		Format: format, Holder: l.holder, Hostname: l.hostname, PID: l.pid,
		AcquiredAt: l.clock.Now().UTC().Format(time.RFC3339Nano),
		// Rounded up, so a waiter never honours less than the holder's TTL.
		TTLMs: int64((l.ttl + time.Millisecond - 1) / time.Millisecond),
		Nonce: nonce, Token: token,
	}
}

// newNonce returns 128 random bits in hex: unguessable, so only the
// acquisition that drew it can write a record that heldBy recognises.
func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lock: nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// sleep waits d on the lock's clock, or until ctx is done.
func (l *Lock) sleep(ctx context.Context, d time.Duration) error {
	t := l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
